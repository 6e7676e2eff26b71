package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// httpSender posts bodies over a fixed pool of HTTP/1.1 keep-alive connections with a minimal
// client: the request head is built once, and a response is read as status line, headers and
// a Content-Length body. net/http's client cost about 136 µs of CPU per request here, a tenth
// of the cluster's own at the knee, on the same two cores; the point of a compiled generator
// is that its share stays small.
type httpSender struct {
	addr    string
	head    []byte
	timeout time.Duration
	// pool holds the idle connections; a request waits for one, and that wait counts in its
	// latency like any other queueing.
	pool chan *httpConn
}

type httpConn struct {
	conn   net.Conn
	reader *bufio.Reader
}

func newHTTPSender(o options) (*httpSender, error) {
	u, err := url.Parse(o.url)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("-url must be http://host:port, not %q", o.url)
	}
	s := &httpSender{
		addr:    u.Host,
		timeout: o.timeout,
		pool:    make(chan *httpConn, o.conns),
	}
	head := "POST " + o.path + " HTTP/1.1\r\nhost: " + u.Host + "\r\ncontent-type: " + o.contentType
	for _, h := range o.headers {
		head += "\r\n" + h[0] + ": " + h[1]
	}
	s.head = []byte(head + "\r\ncontent-length: ")
	for i := 0; i < o.conns; i++ {
		s.pool <- nil
	}
	return s, nil
}

func (s *httpSender) send(body []byte) error {
	c := <-s.pool
	if c == nil {
		conn, err := net.DialTimeout("tcp", s.addr, s.timeout)
		if err != nil {
			s.pool <- nil
			return &failure{key: "transport", detail: err.Error()}
		}
		c = &httpConn{conn: conn, reader: bufio.NewReaderSize(conn, 64<<10)}
	}
	status, payload, keep, retryAfter, err := c.roundTrip(s, body)
	if err != nil || !keep {
		c.conn.Close()
		c = nil
	}
	s.pool <- c
	if err != nil {
		return &failure{key: "transport", detail: err.Error()}
	}
	if status != 200 {
		if len(payload) > 200 {
			payload = payload[:200]
		}
		return &failure{key: fmt.Sprintf("http %d", status), detail: string(payload), retryAfter: retryAfter}
	}
	return nil
}

// roundTrip writes one request and reads its response; keep is false when the server asked to
// close the connection, retryAfter true when it said when to come back.
func (c *httpConn) roundTrip(s *httpSender, body []byte) (status int, payload []byte, keep, retryAfter bool, err error) {
	if err := c.conn.SetDeadline(time.Now().Add(s.timeout)); err != nil {
		return 0, nil, false, false, err
	}
	req := make([]byte, 0, len(s.head)+16+len(body))
	req = append(req, s.head...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n\r\n"...)
	req = append(req, body...)
	if _, err := c.conn.Write(req); err != nil {
		return 0, nil, false, false, err
	}
	line, err := c.reader.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, false, err
	}
	status, err = parseStatusLine(line)
	if err != nil {
		return 0, nil, false, false, err
	}
	length, keep := -1, true
	for {
		line, err := c.reader.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			return 0, nil, false, false, fmt.Errorf("malformed header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, false, fmt.Errorf("bad content-length %q", value)
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			return 0, nil, false, false, fmt.Errorf("transfer-encoding %q is not supported", value)
		case bytes.EqualFold(name, []byte("connection")):
			keep = !bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("retry-after")):
			retryAfter = len(value) > 0
		}
	}
	if length < 0 {
		return 0, nil, false, false, fmt.Errorf("response without content-length")
	}
	if status == 200 {
		// A success's body is not inspected: skipping it spares an allocation per request.
		if _, err := c.reader.Discard(length); err != nil {
			return 0, nil, false, false, err
		}
		return status, nil, keep, retryAfter, nil
	}
	payload = make([]byte, length)
	if _, err := io.ReadFull(c.reader, payload); err != nil {
		return 0, nil, false, false, err
	}
	return status, payload, keep, retryAfter, nil
}

// parseStatusLine reads the code of "HTTP/1.1 200 OK\r\n".
func parseStatusLine(line []byte) (int, error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	return code, nil
}
