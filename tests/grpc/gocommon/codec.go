// SPDX-License-Identifier: GPL-2.0
// The "proto" codec both test programs force.  Copied beside each test
// program's main.go (mk/grpc.mk).
package main

import (
	protov1 "github.com/golang/protobuf/proto"
	"google.golang.org/protobuf/proto"
)

// protoCodec marshals with the protobuf API the generated code is made for:
// the grpc-go in Debian 12 still marshals through the older
// github.com/golang/protobuf, which cannot encode these messages.
type protoCodec struct{}

// grpc-go's own messages (grpc.health.v1) are of the older API.
func (protoCodec) Marshal(v interface{}) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return proto.Marshal(m)
	}
	return protov1.Marshal(v.(protov1.Message))
}
func (protoCodec) Unmarshal(b []byte, v interface{}) error {
	if m, ok := v.(proto.Message); ok {
		return proto.Unmarshal(b, m)
	}
	return protov1.Unmarshal(b, v.(protov1.Message))
}

// String: the server registers it as a grpc.Codec (CustomCodec), which
// names itself so.
func (protoCodec) String() string { return "proto" }
func (protoCodec) Name() string   { return "proto" }
