package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"
)

type httpSender struct {
	client      *http.Client
	url         string
	contentType string
}

// newHTTPSender keeps up to -conns keep-alive connections; requests beyond them wait in the
// transport, and that wait counts in their latency like any other queueing.
func newHTTPSender(o options) *httpSender {
	transport := &http.Transport{
		MaxIdleConns:        o.conns,
		MaxIdleConnsPerHost: o.conns,
		MaxConnsPerHost:     o.conns,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
	}
	return &httpSender{
		client:      &http.Client{Transport: transport, Timeout: o.timeout},
		url:         o.url + o.path,
		contentType: o.contentType,
	}
}

func (s *httpSender) send(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", s.contentType)
	res, err := s.client.Do(req)
	if err != nil {
		return &failure{key: "transport", detail: err.Error()}
	}
	defer res.Body.Close()
	payload, err := io.ReadAll(res.Body)
	if err != nil {
		return &failure{key: "transport", detail: err.Error()}
	}
	if res.StatusCode != http.StatusOK {
		snippet := payload
		if len(snippet) > 200 {
			snippet = snippet[:200]
		}
		return &failure{key: fmt.Sprintf("http %d", res.StatusCode), detail: string(snippet)}
	}
	return nil
}
