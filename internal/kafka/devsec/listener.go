package devsec

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kfake advertises SaslHandshake versions 1 to 1; Apache Kafka advertises
// 0 to 1. librdkafka (kcat) enables SASL only for a broker that advertises
// version 0, although it then sends version 1, so it refused kfake's SASL
// ("SASL Handshake not supported by broker"). The listener below serves
// TLS itself and corrects that one number in ApiVersions responses, so that
// kcat and every librdkafka client authenticate as they do against Kafka.

// listenFn is kfake's ListenFn: TLS with cfg, ApiVersions corrected.
func listenFn(cfg *tls.Config) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		l, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		return fixListener{tls.NewListener(l, cfg)}, nil
	}
}

type fixListener struct{ net.Listener }

func (l fixListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &fixConn{Conn: c, versions: map[int32]int16{}}, nil
}

// fixConn notes the correlation ids of ApiVersions requests as the broker
// reads them, and patches the matching responses as it writes them. Other
// frames pass through untouched, without being buffered.
type fixConn struct {
	net.Conn
	// read side (the broker's reads run on one goroutine)
	rhead []byte // bytes of the current request's size+header read so far
	rskip int    // bytes of the current request still to pass
	// write side (the broker's writes run on one goroutine)
	versions map[int32]int16 // correlation id → ApiVersions request version
	whead    []byte          // bytes of the current response's size+correlation id
	wskip    int             // bytes of the current response still to pass
	wframe   []byte          // an ApiVersions response being collected
	wneed    int             // its bytes still to come
	wver     int16           // its version
	mu       sync.Mutex      // guards versions (read and written on two goroutines)
}

const requestHeader = 4 + 2 + 2 + 4 // size, api key, api version, correlation id

func (c *fixConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	for b := p[:n]; len(b) > 0; {
		if c.rskip > 0 {
			k := min(c.rskip, len(b))
			c.rskip, b = c.rskip-k, b[k:]
			continue
		}
		k := min(requestHeader-len(c.rhead), len(b))
		c.rhead, b = append(c.rhead, b[:k]...), b[k:]
		if len(c.rhead) < requestHeader {
			continue
		}
		size := int(int32(binary.BigEndian.Uint32(c.rhead)))
		key := int16(binary.BigEndian.Uint16(c.rhead[4:]))
		if key == int16(kmsg.ApiVersions) {
			c.noteVersion(int32(binary.BigEndian.Uint32(c.rhead[8:])), int16(binary.BigEndian.Uint16(c.rhead[6:])))
		}
		c.rskip, c.rhead = max(size-(requestHeader-4), 0), c.rhead[:0]
	}
	return n, err
}

func (c *fixConn) noteVersion(corr int32, v int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.versions[corr] = v
}

func (c *fixConn) takeVersion(corr int32) (int16, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.versions[corr]
	delete(c.versions, corr)
	return v, ok
}

func (c *fixConn) Write(p []byte) (int, error) {
	for b := p; len(b) > 0; {
		switch {
		case c.wskip > 0:
			k := min(c.wskip, len(b))
			if _, err := c.Conn.Write(b[:k]); err != nil {
				return 0, err
			}
			c.wskip, b = c.wskip-k, b[k:]
		case c.wneed > 0:
			k := min(c.wneed, len(b))
			c.wframe, c.wneed, b = append(c.wframe, b[:k]...), c.wneed-k, b[k:]
			if c.wneed == 0 {
				advertiseHandshakeV0(c.wframe[8:], c.wver)
				if _, err := c.Conn.Write(c.wframe); err != nil {
					return 0, err
				}
				c.wframe = nil
			}
		default:
			k := min(8-len(c.whead), len(b))
			c.whead, b = append(c.whead, b[:k]...), b[k:]
			if len(c.whead) < 8 {
				continue
			}
			size := int(int32(binary.BigEndian.Uint32(c.whead)))
			if v, ok := c.takeVersion(int32(binary.BigEndian.Uint32(c.whead[4:]))); ok {
				c.wframe, c.wneed = append([]byte(nil), c.whead...), max(size-4, 0)
				c.wver = v
			} else {
				if _, err := c.Conn.Write(c.whead); err != nil {
					return 0, err
				}
				c.wskip = max(size-4, 0)
			}
			c.whead = c.whead[:0]
		}
	}
	return len(p), nil
}

// advertiseHandshakeV0 rewrites, in place, an ApiVersions response body of
// version v so that it advertises SaslHandshake from version 0. A body it
// cannot read is left as it is.
func advertiseHandshakeV0(body []byte, v int16) {
	resp := kmsg.ApiVersionsResponse{Version: v}
	if err := resp.ReadFrom(body); err != nil {
		return
	}
	changed := false
	for i, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.SASLHandshake) && k.MinVersion > 0 {
			resp.ApiKeys[i].MinVersion, changed = 0, true
		}
	}
	if out := resp.AppendTo(nil); changed && len(out) == len(body) {
		copy(body, out)
	}
}
