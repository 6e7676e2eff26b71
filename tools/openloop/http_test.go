package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHTTPSenderReusesConnectionsAndReportsStatuses(t *testing.T) {
	var conns atomic.Int32
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" ||
			r.Header.Get("content-type") != "application/json":
			w.WriteHeader(http.StatusBadRequest)
		case string(body) == "close":
			w.Header().Set("connection", "close")
			_, _ = w.Write([]byte("{}"))
		case string(body) == "fail":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"busy"}`))
		default:
			w.Header().Set("content-length", "100000")
			_, _ = w.Write([]byte(strings.Repeat("x", 100_000)))
		}
	}))
	server.Listener = countingListener{server.Listener, &conns}
	server.Start()
	defer server.Close()

	s, err := newHTTPSender(options{url: server.URL, path: "/v1/embeddings",
		contentType: "application/json", conns: 1, timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.send([]byte(`{"input":"a"}`)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Fatalf("three requests opened %d connections, want 1 (keep-alive)", got)
	}
	err = s.send([]byte("fail"))
	if f, ok := err.(*failure); !ok || f.key != "http 503" || !strings.Contains(f.detail, "busy") {
		t.Fatalf("a 503 gave %v", err)
	}
	if err := s.send([]byte("close")); err != nil {
		t.Fatal(err)
	}
	if err := s.send([]byte(`{"input":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != 2 {
		t.Fatalf("after connection: close, %d connections were opened, want 2", got)
	}
}

func TestHTTPSenderRefusesANonHTTPURL(t *testing.T) {
	if _, err := newHTTPSender(options{url: "127.0.0.1:8080", conns: 1}); err == nil {
		t.Fatal("a URL without http:// was accepted")
	}
}

type countingListener struct {
	net.Listener
	accepted *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func TestHTTPSenderSendsHeadersAndNoticesRetryAfter(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("authorization") != "Bearer k1" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("{}"))
			return
		}
		w.Header().Set("retry-after", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":"slow down"}`))
	}))
	defer server.Close()
	var headers headerList
	if err := headers.Set("Authorization: Bearer k1"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"no colon", ": empty name", "a b: c", "x: \r\ny"} {
		if err := headers.Set(bad); err == nil {
			t.Fatalf("-header %q was accepted", bad)
		}
	}
	s, err := newHTTPSender(options{url: server.URL, path: "/v1/embeddings",
		contentType: "application/json", conns: 1, timeout: 5 * time.Second, headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	err = s.send([]byte(`{}`))
	if f, ok := err.(*failure); !ok || f.key != "http 429" || !f.retryAfter {
		t.Fatalf("a 429 with Retry-After gave %#v", err)
	}
}
