// SPDX-License-Identifier: GPL-2.0
// Command rg-grpc-go-server is a minimal GreptimeDB-compatible gRPC ingest
// server on grpc-go: Handle and HandleRequests store rows per database
// (dbname, else catalog/schema lower-cased, as greptimedb) and GET /stats on
// the admin port answers {"rows": {...}, "calls": N, "messages": N,
// "other_rows": N, "other_calls": N, "uncounted_rows": N,
// "uncounted_calls": N, "conns": N, "streams": N,
// "streams_open": N, "streams_open_max": N} (connections accepted; streams
// begun, open now, most open at once: what a refused stream the kernel
// resets costs the server's stream limit).  On the same port it serves two
// other services, which rowgate must pass untouched: grpc.health.v1.Health
// (service "rowgate.test" SERVING) and rowgate.test.Other/Handle, which
// takes a GreptimeRequest too and counts its rows apart; and, as unary
// GreptimeRequest handlers counted in uncounted_*, three methods that store
// rows in GreptimeDB and that rowgate refuses (OTLP metrics Export, Flight
// DoPut, OTel Arrow ArrowMetrics).  It is
// the second server implementation the HTTP/2 design probes run against
// (tests/grpc/h2_probe.py); the main test server is greptime_server.py.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // grpc-encoding: gzip, as GreptimeDB (zstd: gocommon)
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats"
)

type store struct {
	mu         sync.Mutex
	Rows       map[string]uint64 `json:"rows"`
	Calls      uint64            `json:"calls"`
	Messages   uint64            `json:"messages"`
	OtherRows  uint64            `json:"other_rows"`
	OtherCalls uint64            `json:"other_calls"`
	Conns      uint64            `json:"conns"`
	Streams    uint64            `json:"streams"`
	Open       uint64            `json:"streams_open"`
	OpenMax    uint64            `json:"streams_open_max"`
	// calls of the methods rowgate refuses by default (--grpc-uncounted)
	UncountedRows  uint64 `json:"uncounted_rows"`
	UncountedCalls uint64 `json:"uncounted_calls"`
}

// streamStats counts connections and streams from grpc-go's stats events:
// Begin is emitted when a stream's handler goroutine starts (before its
// message is read), End when the stream finishes, reset or not.
type streamStats struct{ st *store }

func (h streamStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h streamStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h streamStats) HandleRPC(_ context.Context, s stats.RPCStats) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	switch s.(type) {
	case *stats.Begin:
		h.st.Streams++
		h.st.Open++
		if h.st.Open > h.st.OpenMax {
			h.st.OpenMax = h.st.Open
		}
	case *stats.End:
		h.st.Open--
	}
}
func (h streamStats) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		h.st.mu.Lock()
		h.st.Conns++
		h.st.mu.Unlock()
	}
}

func dbOf(h *RequestHeader) string {
	if h == nil {
		return "public"
	}
	if h.Dbname != "" {
		if strings.HasPrefix(h.Dbname, "greptime-") {
			return h.Dbname[len("greptime-"):]
		}
		return h.Dbname
	}
	cat, sch := strings.ToLower(h.Catalog), strings.ToLower(h.Schema)
	if cat == "" {
		cat = "greptime"
	}
	if sch == "" {
		sch = "public"
	}
	if cat == "greptime" {
		return sch
	}
	return cat + "-" + sch
}

func rowsOf(r *GreptimeRequest) uint64 {
	var n uint64
	switch x := r.Request.(type) {
	case *GreptimeRequest_RowInserts:
		for _, ri := range x.RowInserts.GetInserts() {
			n += uint64(len(ri.GetRows().GetRows()))
		}
	case *GreptimeRequest_Inserts:
		for _, in := range x.Inserts.GetInserts() {
			n += uint64(in.GetRowCount())
		}
	}
	return n
}

func (s *store) one(r *GreptimeRequest) uint64 {
	n := rowsOf(r)
	s.mu.Lock()
	s.Rows[dbOf(r.GetHeader())] += n
	s.Messages++
	s.mu.Unlock()
	return n
}

func (s *store) call() {
	s.mu.Lock()
	s.Calls++
	s.mu.Unlock()
}

// countingService: a service of one unary method taking a GreptimeRequest,
// which answers as GreptimeDB does and hands each call's rows to count.
func countingService(service, method string, count func(rows uint64)) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: method,
			Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
				r := &GreptimeRequest{}
				if err := dec(r); err != nil {
					return nil, err
				}
				n := rowsOf(r)
				count(n)
				return response(n), nil
			},
		}},
	}
}

func response(n uint64) *GreptimeResponse {
	return &GreptimeResponse{Header: &ResponseHeader{Status: &Status{}},
		Response: &GreptimeResponse_AffectedRows{AffectedRows: &AffectedRows{Value: uint32(n)}}}
}

func main() {
	port := flag.Int("port", 4001, "gRPC port")
	admin := flag.Int("admin-port", 0, "HTTP port of GET /stats (required)")
	maxStreams := flag.Uint("max-concurrent-streams", 100, "SETTINGS_MAX_CONCURRENT_STREAMS advertised")
	flag.Parse()
	if *admin == 0 {
		fmt.Fprintln(os.Stderr, "rg-grpc-go-server: -admin-port is required")
		os.Exit(2)
	}
	st := &store{Rows: map[string]uint64{}}
	desc := grpc.ServiceDesc{
		ServiceName: "greptime.v1.GreptimeDatabase",
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Handle",
			Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
				st.call()
				r := &GreptimeRequest{}
				if err := dec(r); err != nil {
					return nil, err
				}
				return response(st.one(r)), nil
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "HandleRequests",
			ClientStreams: true,
			Handler: func(_ interface{}, ss grpc.ServerStream) error {
				st.call()
				var n uint64
				for {
					r := &GreptimeRequest{}
					if err := ss.RecvMsg(r); err != nil {
						if err.Error() == "EOF" {
							return ss.SendMsg(response(n))
						}
						return err
					}
					n += st.one(r)
				}
			},
		}},
	}
	srv := grpc.NewServer(grpc.CustomCodec(protoCodec{}), grpc.MaxConcurrentStreams(uint32(*maxStreams)),
		grpc.StatsHandler(streamStats{st}))
	srv.RegisterService(&desc, struct{}{})
	srv.RegisterService(countingService("rowgate.test.Other", "Handle", func(n uint64) {
		st.mu.Lock()
		st.OtherRows += n
		st.OtherCalls++
		st.mu.Unlock()
	}), struct{}{})
	// Methods of GreptimeDB's that store rows rowgate cannot count
	// (rowgated --grpc-uncounted): unary GreptimeRequest handlers here, so
	// a call that reaches the server is counted in uncounted_calls.
	for _, sm := range [][2]string{
		{"opentelemetry.proto.collector.metrics.v1.MetricsService", "Export"},
		{"arrow.flight.protocol.FlightService", "DoPut"},
		{"opentelemetry.proto.experimental.arrow.v1.ArrowMetricsService", "ArrowMetrics"},
	} {
		srv.RegisterService(countingService(sm[0], sm[1], func(n uint64) {
			st.mu.Lock()
			st.UncountedRows += n
			st.UncountedCalls++
			st.mu.Unlock()
		}), struct{}{})
	}
	hs := health.NewServer()
	hs.SetServingStatus("rowgate.test", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "rg-grpc-go-server: %v\n", err)
		os.Exit(1)
	}
	http.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	go func() {
		err := http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *admin), nil)
		fmt.Fprintf(os.Stderr, "rg-grpc-go-server: admin: %v\n", err)
		os.Exit(1)
	}()
	fmt.Printf("rg-grpc-go-server: grpc-go %s on 127.0.0.1:%d, admin http://127.0.0.1:%d/stats\n",
		grpc.Version, *port, *admin)
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintf(os.Stderr, "rg-grpc-go-server: %v\n", err)
		os.Exit(1)
	}
}
