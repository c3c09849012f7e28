//go:build e2e

package e2e

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// tcpProxy forwards TCP connections to one upstream address. Cut severs
// every connection it carries and refuses new ones until Restore, as a
// network partition between its clients and the upstream would.
type tcpProxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	conns map[net.Conn]struct{} // both ends of every forwarded connection
	cut   bool
	// counters since the start: connections forwarded, severed by Cut and
	// refused while cut
	accepted, severed, refused int
	done                       chan struct{}
}

// startProxy listens on a free loopback port and forwards to upstream.
func startProxy(upstream string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go p.serve()
	return p, nil
}

// Addr is the address clients connect to.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer close(p.done)
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.refused++
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.accepted++
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	if _, live := p.conns[c]; !live { // cut while dialling
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a closed TCP connection does.
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
	p.drop(c, up)
}

func (p *tcpProxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

// Cut severs every live connection and refuses new ones; it returns how many
// client connections it severed.
func (p *tcpProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	n := 0
	for c := range p.conns {
		if c.RemoteAddr().String() != p.upstream {
			n++
		}
		_ = c.Close()
		delete(p.conns, c)
	}
	p.severed += n
	return n
}

// Restore lets connections through again.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// counts returns the connections forwarded and refused so far.
func (p *tcpProxy) counts() (accepted, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.refused
}

// Close stops listening and severs every connection.
func (p *tcpProxy) Close() {
	_ = p.ln.Close()
	<-p.done
	p.Cut()
}

// proxiedKubeconfig writes a copy of kubeconfig whose clusters are reached
// through the proxy at addr, and returns the upstream address (host:port) of
// the first cluster. The apiserver's certificate names 127.0.0.1, which the
// proxy listens on too, so TLS verifies as before.
func proxiedKubeconfig(kubeconfig, out, addr string) (upstream string, err error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		host := c.Server
		for _, prefix := range []string{"https://", "http://"} {
			if len(host) > len(prefix) && host[:len(prefix)] == prefix {
				if upstream == "" {
					upstream = host[len(prefix):]
				}
				c.Server = prefix + addr
			}
		}
	}
	if upstream == "" {
		return "", errors.New("no cluster server in " + kubeconfig)
	}
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return upstream, clientcmd.WriteToFile(*cfg, out)
}
