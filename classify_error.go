// Classifying transport errors: what a failed send's error means, from a
// context that ended to a request net/http refused to write.

package heed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// classifyError classifies a transport error; see DefaultClassifier.
func classifyError(req *http.Request, err error) Verdict {
	if (req != nil && req.Context().Err() != nil) || errors.Is(err, context.Canceled) {
		return Verdict{Class: Deliver, Reason: "canceled"}
	}
	var dnsErr *net.DNSError
	isDNS := errors.As(err, &dnsErr)
	if isDNS && dnsErr.IsNotFound {
		return Verdict{Class: Terminal, Reason: "host not found"}
	}
	if tlsVerification(err) {
		return Verdict{Class: Terminal, Reason: "tls verification"}
	}
	msg := err.Error()
	if strings.Contains(msg, "unsupported protocol scheme") {
		return Verdict{Class: Terminal, Reason: "unsupported scheme"}
	}
	if invalidRequest(err) {
		return Verdict{Class: Terminal, Reason: "invalid request"}
	}
	if i := strings.Index(msg, "stopped after "); i >= 0 && strings.Contains(msg[i:], " redirects") {
		return Verdict{Class: Terminal, Reason: "too many redirects"}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Verdict{Class: Transient, Reason: "connection refused"}
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return Verdict{Class: Transient, Reason: "dial failed"}
	}
	if isDNS {
		return Verdict{Class: Transient, Reason: "dns error"}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Verdict{Class: Ambiguous, Reason: "timeout"}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return Verdict{Class: Ambiguous, Reason: "connection reset"}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Verdict{Class: Ambiguous, Reason: "eof"}
	}
	return Verdict{Class: Ambiguous, Reason: "transport error"}
}

// invalidRequestErrors are how the errors net/http returns, untyped, for a
// request it refuses to write begin: nothing was sent, and no retry changes
// the request. net/http's Transport says "net/http: ", its ClientConn
// "http: ", and its HTTP/2 transport wraps the shared header checks in
// "http2: ".
var invalidRequestErrors = []string{
	"net/http: invalid header ", // a field name or value
	"net/http: invalid trailer ",
	"net/http: invalid method ",
	"net/http: can't write control character in Request.URL",
	"http: invalid header ",
	"http: invalid trailer ",
	"http: invalid method ",
	"http: invalid Host header",
	"http: no Host in request URL",
	"http: Request.Write on Request with no Host or URL set",
	"http: nil Request.URL",
	"http: nil Request.Header",
	"http2: invalid Host header",
	"http2: invalid HTTP header ",
	"http2: invalid HTTP trailer ",
	"http2: invalid Trailer key ",
	"http2: invalid request :path ",
	"http2: invalid Upgrade request header",
	"http2: invalid Transfer-Encoding request header",
	"http2: invalid Connection request header",
	"http2: invalid :protocol header",
}

// invalidRequest reports whether err, or an error it wraps, is one of
// invalidRequestErrors. Only the start of each error's own text is
// compared, never text further in, which may quote what a server sent.
func invalidRequest(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		msg := err.Error()
		for _, m := range invalidRequestErrors {
			if strings.HasPrefix(msg, m) {
				return true
			}
		}
	}
	return false
}

// tlsVerification reports whether err is a failure to verify the server's
// certificate, which no retry fixes.
func tlsVerification(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		uaP *x509.UnknownAuthorityError
		ci  x509.CertificateInvalidError
		ciP *x509.CertificateInvalidError
		he  x509.HostnameError
		heP *x509.HostnameError
		sr  x509.SystemRootsError
		srP *x509.SystemRootsError
	)
	return errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &uaP) ||
		errors.As(err, &ci) || errors.As(err, &ciP) ||
		errors.As(err, &he) || errors.As(err, &heP) ||
		errors.As(err, &sr) || errors.As(err, &srP)
}
