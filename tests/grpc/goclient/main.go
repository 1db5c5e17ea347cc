// SPDX-License-Identifier: GPL-2.0
// Command rg-grpc-go is a GreptimeDB gRPC ingest client on grpc-go: row
// inserts (or columnar inserts) through unary Handle or client-streaming
// HandleRequests, with the standard retry policy (RESOURCE_EXHAUSTED
// retryable) in its service config.  With -other N, each call is followed,
// on the same connection, by N calls of grpc.health.v1.Health/Check
// (service "rowgate.test") and N of rowgate.test.Other/Handle (a
// GreptimeRequest to a method rowgate does not route).  -mode writer is
// GreptimeDB's streaming writer: one HandleRequests call held open
// (runWriter).  It prints one JSON line: what it sent and how the calls
// ended.
package main

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

const serviceConfig = `{"methodConfig": [{
  "name": [{"service": "greptime.v1.GreptimeDatabase"}],
  "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "0.5s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`

var streamDesc = grpc.StreamDesc{StreamName: "HandleRequests", ClientStreams: true}

type result struct {
	Impl      string         `json:"impl"`
	Version   string         `json:"version"`
	Mode      string         `json:"mode"`
	DB        string         `json:"db"`
	Calls     int64          `json:"calls"`
	OK        int64          `json:"ok"`
	Failed    int64          `json:"failed"`
	RowsSent  int64          `json:"rows_sent"`
	RowsAcked int64          `json:"rows_acked"`
	Codes     map[string]int `json:"codes"`
	LastError string         `json:"last_error,omitempty"`
	// the first error of each code: a rare code among many names its cause
	FirstErrors map[string]string `json:"first_errors,omitempty"`
	ErrCode     string            `json:"err_code,omitempty"`
	// RetryInfo of the first RESOURCE_EXHAUSTED (grpc-status-details-bin):
	// -1 when it carried none
	RetryDelayS int64 `json:"retry_delay_s,omitempty"`
	Seconds     float64           `json:"seconds"`
	// -other: calls of the services rowgate does not route
	HealthOK    int64  `json:"health_ok"`
	OtherOK     int64  `json:"other_ok"`
	OtherFailed int64  `json:"other_failed"`
	OtherRows   int64  `json:"other_rows_acked"`
	OtherError  string `json:"other_error,omitempty"`
	// -mode writer
	Messages int64 `json:"messages,omitempty"` // distinct messages made
	Sends    int64 `json:"sends,omitempty"`    // messages written, resends included
	Resent   int64 `json:"resent,omitempty"`
	Pending  int64 `json:"pending,omitempty"` // of a failed call, never sent again
}

// writerOpts: -mode writer's flags.
type writerOpts struct {
	rate       float64 // messages a second
	seconds    time.Duration
	drain      time.Duration // -resend: how long to go on resending after seconds
	backoff    time.Duration // before a failed call is reopened, doubling to maxBackoff
	maxBackoff time.Duration
	perCall    int // messages a call carries before it is closed; 0: no end
	deadline   time.Duration
	resend     bool
	rows       int64
}

// noteError counts a failed call's status in res.
func noteError(res *result, err error, trailer metadata.MD) {
	res.Failed++
	st := status.Convert(err)
	code := fmt.Sprint(int(st.Code()))
	res.Codes[code]++
	res.LastError = st.Message()
	if _, seen := res.FirstErrors[code]; !seen {
		res.FirstErrors[code] = st.Message()
		if st.Code() == codes.ResourceExhausted {
			res.RetryDelayS = -1
			for _, d := range st.Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay != nil {
					res.RetryDelayS = ri.RetryDelay.Seconds
				}
			}
		}
	}
	if v := trailer.Get("x-greptime-err-code"); len(v) > 0 {
		res.ErrCode = v[0]
	}
}

// runWriter is GreptimeDB's streaming writer: one HandleRequests call held
// open, o.rate messages a second for o.seconds (or o.perCall messages a
// call).  A call that fails (the server's limiter, or rowgate's, ends it at
// the message it refuses, after storing the earlier ones) is reopened after
// a backoff, doubling from o.backoff to o.maxBackoff; with o.resend the
// failed call's messages are sent again first, since the client cannot
// know which of them were stored, until none is left or o.drain passes.
func runWriter(conn *grpc.ClientConn, message func() *GreptimeRequest, o writerOpts, res *result) {
	interval := time.Duration(float64(time.Second) / o.rate)
	var queue []*GreptimeRequest
	stop := time.Now().Add(o.seconds)
	end := stop.Add(o.drain)
	next := time.Now()
	backoff := o.backoff
	for {
		if now := time.Now(); !now.Before(stop) && (!o.resend || len(queue) == 0 || !now.Before(end)) {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.seconds+o.drain+o.deadline)
		var trailer metadata.MD
		var inCall []*GreptimeRequest
		cs, err := conn.NewStream(ctx, &streamDesc, "/greptime.v1.GreptimeDatabase/HandleRequests",
			grpc.Trailer(&trailer))
		for err == nil && (o.perCall == 0 || len(inCall) < o.perCall) {
			now := time.Now()
			var m *GreptimeRequest
			switch {
			case !now.Before(end):
			case len(queue) > 0:
				m, queue = queue[0], queue[1:]
				res.Resent++
			case now.Before(stop):
				m = message()
				res.Messages++
			}
			if m == nil {
				break
			}
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			// no burst to catch up after a stall
			if next = next.Add(interval); time.Until(next) < -time.Second {
				next = time.Now()
			}
			inCall = append(inCall, m)
			res.Sends++
			err = cs.SendMsg(m)
		}
		if err == nil {
			err = cs.CloseSend()
		}
		resp := &GreptimeResponse{}
		if err == nil || err == io.EOF {
			err = cs.RecvMsg(resp)
		}
		cancel()
		res.Calls++
		if err == nil {
			res.OK++
			res.RowsSent += int64(len(inCall)) * o.rows
			res.RowsAcked += int64(resp.GetAffectedRows().GetValue())
			backoff = o.backoff
			continue
		}
		noteError(res, err, trailer)
		if o.resend {
			queue = append(inCall, queue...)
		} else {
			res.Pending += int64(len(inCall))
		}
		time.Sleep(backoff)
		if backoff *= 2; backoff > o.maxBackoff {
			backoff = o.maxBackoff
		}
	}
	res.Pending += int64(len(queue))
}

func main() {
	target := flag.String("target", "", "server HOST:PORT (required)")
	db := flag.String("db", "", "RequestHeader.dbname (required); A,B,... takes them in turn, message by message")
	mode := flag.String("mode", "unary", "unary (Handle), stream (HandleRequests) or writer (one HandleRequests call held open)")
	method := flag.String("method", "/greptime.v1.GreptimeDatabase/Handle",
		"the method path of unary calls (another path: the same GreptimeRequest to that method)")
	calls := flag.Int("calls", 10, "calls to make")
	perCall := flag.Int("per-call", 3, "messages per HandleRequests call")
	rows := flag.Int("rows", 10, "rows per message")
	columnar := flag.Bool("columnar", false, "send InsertRequests (row_count) instead of row inserts")
	id := flag.String("id", "go", "prefix of the unique table names")
	conc := flag.Int("concurrency", 1, "calls in flight at once")
	noRetry := flag.Bool("no-retry", false, "no retry policy in the service config")
	useGzip := flag.Bool("gzip", false, "compress messages (grpc-encoding: gzip)")
	useZstd := flag.Bool("zstd", false, "compress messages (grpc-encoding: zstd)")
	deadline := flag.Duration("deadline", 60*time.Second, "deadline of each call")
	gap := flag.Duration("gap", 0, "pause between a HandleRequests call's messages (a long-lived stream)")
	stagger := flag.Duration("stagger", 0, "start worker i of -concurrency i times this late")
	callGap := flag.Duration("call-gap", 0, "pause between a worker's calls (one connection, calls apart in time)")
	others := flag.Int("other", 0, "Health/Check and rowgate.test.Other/Handle calls after each call")
	wRate := flag.Float64("rate", 10, "-mode writer: messages a second")
	wSeconds := flag.Duration("seconds", 10*time.Second, "-mode writer: how long to write new messages")
	wResend := flag.Bool("resend", false, "-mode writer: send a failed call's messages again")
	wDrain := flag.Duration("drain", 30*time.Second, "-mode writer -resend: how long to go on resending after -seconds")
	wBackoff := flag.Duration("backoff", 100*time.Millisecond, "-mode writer: pause before a failed call is reopened (doubling)")
	wMaxBackoff := flag.Duration("max-backoff", 2*time.Second, "-mode writer: the longest pause")
	wPerCall := flag.Int("call-messages", 0, "-mode writer: close each call after this many messages (0: one call)")
	source := flag.String("source", "", "the client's own address (IP), e.g. another 127.0.0.0/8 one")
	msgBytes := flag.Int("msg-bytes", 0,
		"row inserts: lengthen each message's table name so that it marshals (with -gzip: compresses) to exactly this many bytes")
	flag.Parse()
	if *target == "" || *db == "" {
		fmt.Fprintln(os.Stderr, "rg-grpc-go: -target and -db are required")
		flag.Usage()
		os.Exit(2)
	}
	if *msgBytes > 0 && (*useZstd || *columnar) {
		fmt.Fprintln(os.Stderr, "rg-grpc-go: -msg-bytes takes row inserts, plain or -gzip")
		os.Exit(2)
	}
	if *mode != "unary" && *mode != "stream" && *mode != "writer" {
		fmt.Fprintf(os.Stderr, "rg-grpc-go: -mode is unary, stream or writer, got %q\n", *mode)
		os.Exit(2)
	}
	if *mode == "writer" && !(*wRate > 0) {
		fmt.Fprintln(os.Stderr, "rg-grpc-go: -rate must be above 0")
		os.Exit(2)
	}
	callOpts := []grpc.CallOption{grpc.ForceCodec(protoCodec{})}
	if *useGzip {
		callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
	} else if *useZstd {
		callOpts = append(callOpts, grpc.UseCompressor(zstdName))
	}
	opts := []grpc.DialOption{grpc.WithInsecure(), grpc.WithDefaultCallOptions(callOpts...)}
	// a writer retries its calls itself
	if !*noRetry && *mode != "writer" {
		opts = append(opts, grpc.WithDefaultServiceConfig(serviceConfig))
	}
	if *source != "" {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*source)}}
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}))
	}
	conn, err := grpc.Dial(*target, opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rg-grpc-go: dial %s: %v\n", *target, err)
		os.Exit(1)
	}
	defer conn.Close()

	var seq int64
	message := func() *GreptimeRequest {
		n := atomic.AddInt64(&seq, 1) - 1
		table := fmt.Sprintf("%s_%d", *id, n)
		dbs := strings.Split(*db, ",")
		hdr := &RequestHeader{Dbname: dbs[n%int64(len(dbs))]}
		if *columnar {
			ts := make([]int64, *rows)
			v := make([]float64, *rows)
			for r := range ts {
				ts[r] = 1700000000000 + int64(r)
				v[r] = float64(r) * 0.5
			}
			return &GreptimeRequest{Header: hdr, Request: &GreptimeRequest_Inserts{Inserts: &InsertRequests{
				Inserts: []*InsertRequest{{TableName: table, RowCount: uint32(*rows), Columns: []*Column{
					{ColumnName: "ts", SemanticType: SemanticType_TIMESTAMP, Datatype: ColumnDataType_TIMESTAMP_MILLISECOND,
						Values: &Column_Values{TimestampMillisecondValues: ts}},
					{ColumnName: "v", SemanticType: SemanticType_FIELD, Datatype: ColumnDataType_FLOAT64,
						Values: &Column_Values{F64Values: v}},
				}}}}}}
		}
		rs := make([]*Row, *rows)
		for r := range rs {
			rs[r] = &Row{Values: []*Value{
				{ValueData: &Value_TimestampMillisecondValue{TimestampMillisecondValue: 1700000000000 + int64(r)}},
				{ValueData: &Value_F64Value{F64Value: float64(r) * 0.5}},
			}}
		}
		ri := &RowInsertRequest{TableName: table, Rows: &Rows{
			Schema: []*ColumnSchema{
				{ColumnName: "ts", Datatype: ColumnDataType_TIMESTAMP_MILLISECOND, SemanticType: SemanticType_TIMESTAMP},
				{ColumnName: "v", Datatype: ColumnDataType_FLOAT64, SemanticType: SemanticType_FIELD},
			},
			Rows: rs}}
		req := &GreptimeRequest{Header: hdr, Request: &GreptimeRequest_RowInserts{RowInserts: &RowInsertRequests{
			Inserts: []*RowInsertRequest{ri}}}}
		if *msgBytes > 0 && *useGzip {
			padCompressed(req, ri, table, *msgBytes, n)
			return req
		}
		// a length prefix may grow a byte as the name grows: a few rounds
		for i := 0; *msgBytes > 0 && i < 4; i++ {
			if d := *msgBytes - proto.Size(req); d > 0 {
				ri.TableName += strings.Repeat("x", d)
			} else if d < 0 && len(ri.TableName)+d > len(table) {
				ri.TableName = ri.TableName[:len(ri.TableName)+d]
			}
		}
		if *msgBytes > 0 && proto.Size(req) != *msgBytes {
			fmt.Fprintf(os.Stderr, "rg-grpc-go: -msg-bytes %d: the message marshals to %d bytes\n",
				*msgBytes, proto.Size(req))
			os.Exit(2)
		}
		return req
	}

	res := result{Impl: "grpc-go", Version: grpc.Version, Mode: *mode, DB: *db, Codes: map[string]int{},
		FirstErrors: map[string]string{}}
	var mu sync.Mutex
	otherCalls := func() {
		ctx, cancel := context.WithTimeout(context.Background(), *deadline)
		defer cancel()
		for i := 0; i < *others; i++ {
			hr := &healthpb.HealthCheckResponse{}
			herr := conn.Invoke(ctx, "/grpc.health.v1.Health/Check",
				&healthpb.HealthCheckRequest{Service: "rowgate.test"}, hr)
			resp := &GreptimeResponse{}
			oerr := conn.Invoke(ctx, "/rowgate.test.Other/Handle", message(), resp)
			mu.Lock()
			if herr == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				res.HealthOK++
			} else {
				res.OtherFailed++
				res.OtherError = fmt.Sprint("health: ", herr)
			}
			if oerr == nil {
				res.OtherOK++
				res.OtherRows += int64(resp.GetAffectedRows().GetValue())
			} else {
				res.OtherFailed++
				res.OtherError = fmt.Sprint("other: ", oerr)
			}
			mu.Unlock()
		}
	}
	oneCall := func() {
		defer otherCalls()
		ctx, cancel := context.WithTimeout(context.Background(), *deadline)
		defer cancel()
		var trailer metadata.MD
		resp := &GreptimeResponse{}
		n := *rows
		var err error
		if *mode == "unary" {
			err = conn.Invoke(ctx, *method, message(), resp, grpc.Trailer(&trailer))
		} else {
			n = *rows * *perCall
			var cs grpc.ClientStream
			cs, err = conn.NewStream(ctx, &streamDesc, "/greptime.v1.GreptimeDatabase/HandleRequests", grpc.Trailer(&trailer))
			for m := 0; err == nil && m < *perCall; m++ {
				if m > 0 && *gap > 0 {
					time.Sleep(*gap)
				}
				err = cs.SendMsg(message())
			}
			if err == nil {
				err = cs.CloseSend()
			}
			if err == nil || err.Error() == "EOF" {
				err = cs.RecvMsg(resp)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		res.Calls++
		if err != nil {
			noteError(&res, err, trailer)
			return
		}
		res.OK++
		res.RowsSent += int64(n)
		res.RowsAcked += int64(resp.GetAffectedRows().GetValue())
	}

	start := time.Now()
	if *mode == "writer" {
		runWriter(conn, message, writerOpts{rate: *wRate, seconds: *wSeconds, drain: *wDrain,
			backoff: *wBackoff, maxBackoff: *wMaxBackoff, perCall: *wPerCall, deadline: *deadline, resend: *wResend, rows: int64(*rows)}, &res)
		res.Seconds = time.Since(start).Seconds()
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		// refusals are the writer's normal life: it fails on anything else
		// or, resending, on a message never stored
		if res.Failed > int64(res.Codes["8"]) || (*wResend && res.Pending > 0) {
			os.Exit(1)
		}
		return
	}
	var next int64
	var wg sync.WaitGroup
	for w := 0; w < *conc || w == 0; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			time.Sleep(time.Duration(w) * *stagger)
			for i := 0; atomic.AddInt64(&next, 1) <= int64(*calls); i++ {
				if i > 0 && *callGap > 0 {
					time.Sleep(*callGap)
				}
				oneCall()
			}
		}(w)
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Failed > 0 || res.OtherFailed > 0 {
		os.Exit(1)
	}
}

// gzipSize is the length of what grpc-go's gzip compressor (compress/gzip
// at its default level, no header fields) makes of req.
func gzipSize(req proto.Message) int {
	b, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	z := stdgzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	return buf.Len()
}

// padCompressed lengthens ri's table name with letters that gzip cannot
// shrink much until req compresses to exactly want bytes: the compressed
// size grows (nearly) monotonically with the padding, so a binary search
// finds the neighbourhood and a scan the exact length.
func padCompressed(req *GreptimeRequest, ri *RowInsertRequest, table string, want int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	letters := make([]byte, 4*want+64)
	for i := range letters {
		letters[i] = byte('a' + rng.Intn(26))
	}
	size := func(n int) int {
		ri.TableName = table + string(letters[:n])
		return gzipSize(req)
	}
	lo, hi := 0, len(letters)
	for lo < hi {
		mid := (lo + hi) / 2
		if size(mid) < want {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for d := 0; d < 256; d++ {
		for _, n := range []int{lo + d, lo - d} {
			if n >= 0 && n <= len(letters) && size(n) == want {
				return
			}
		}
	}
	fmt.Fprintf(os.Stderr, "rg-grpc-go: -msg-bytes %d: no table name compresses to that\n", want)
	os.Exit(2)
}
