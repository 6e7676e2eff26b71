package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// rawCodec passes already-encoded protobuf through: the bench encodes the requests with the
// project's own generated code, and the answers are only checked for their status.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

type grpcSender struct {
	conns  []*grpc.ClientConn
	next   atomic.Uint64
	method string
	o      options
}

// newGrpcSender opens -conns HTTP/2 connections and spreads calls over them in turn.
func newGrpcSender(o options) (*grpcSender, error) {
	target := strings.TrimPrefix(strings.TrimPrefix(o.url, "http://"), "https://")
	s := &grpcSender{method: o.path, o: o}
	for i := 0; i < o.conns; i++ {
		conn, err := grpc.NewClient(target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
		if err != nil {
			return nil, err
		}
		s.conns = append(s.conns, conn)
	}
	return s, nil
}

func (s *grpcSender) send(body []byte) error {
	conn := s.conns[s.next.Add(1)%uint64(len(s.conns))]
	ctx, cancel := context.WithTimeout(context.Background(), s.o.timeout)
	defer cancel()
	for _, h := range s.o.headers {
		ctx = metadata.AppendToOutgoingContext(ctx, h[0], h[1])
	}
	var reply []byte
	if err := conn.Invoke(ctx, s.method, &body, &reply); err != nil {
		st, _ := status.FromError(err)
		return &failure{key: "grpc " + st.Code().String(), detail: st.Message()}
	}
	return nil
}
