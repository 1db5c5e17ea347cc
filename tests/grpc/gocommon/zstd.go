// SPDX-License-Identifier: GPL-2.0
// grpc-encoding: zstd, which GreptimeDB's GreptimeDatabase service accepts
// (tonic's accept_compressed(Zstd)) and grpc-go 1.33 does not ship:
// registered from klauspost/compress (Debian's
// golang-github-klauspost-compress-dev), standard zstd frames.  Copied
// beside each test program's main.go (mk/grpc.mk).
package main

import (
	"io"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc/encoding"
)

const zstdName = "zstd"

type zstdCompressor struct{}

func (zstdCompressor) Name() string { return zstdName }

func (zstdCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	return zstd.NewWriter(w)
}

// zstdReader closes its decoder at the end of the message, so that a
// decoder's goroutines do not outlive it.
type zstdReader struct{ d *zstd.Decoder }

func (r zstdReader) Read(p []byte) (int, error) {
	n, err := r.d.Read(p)
	if err == io.EOF {
		r.d.Close()
	}
	return n, err
}

func (zstdCompressor) Decompress(r io.Reader) (io.Reader, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return zstdReader{d}, nil
}

func init() { encoding.RegisterCompressor(zstdCompressor{}) }
