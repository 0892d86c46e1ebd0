// Refusals in a success: a 2xx whose body says the request was refused, a
// GraphQL throttle or a stream that opens with an error, read only where a
// Policy asks for it (Policy.PeekSuccess).

package heed

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"
)

// Sources of the waits read from a 2xx body, as Verdict.Source names them.
const sourceThrottleStatus = "throttleStatus" // Shopify GraphQL's extensions.cost.throttleStatus

// successClassifier returns inner, reading first the start of a 2xx body
// for a refusal it hides; every other response goes to inner as it is.
func successClassifier(inner Classifier) Classifier {
	return func(req *http.Request, resp *http.Response, err error) Verdict {
		if err == nil && resp != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if v, ok := refusalInSuccess(resp); ok {
				return v
			}
		}
		return inner(req, resp, err)
	}
}

// refusalInSuccess reads a 2xx body that may hide a refusal: a JSON
// document (application/json or application/graphql-response+json, a
// GraphQL answer) or an event stream's first event. Any other body is not
// read: a stream of JSON lines (application/x-ndjson, …+json-seq) would be
// held, and a stream whose bytes are encoded (a Content-Encoding the caller
// asked for) cannot be told into events as it comes.
func refusalInSuccess(resp *http.Response) (Verdict, bool) {
	media, _, _ := strings.Cut(respContentType(resp), ";")
	switch strings.TrimSpace(media) {
	case "text/event-stream":
		if e := resp.Header["Content-Encoding"]; len(e) > 0 && !strings.EqualFold(strings.TrimSpace(e[0]), "identity") {
			return Verdict{}, false
		}
		b, _ := peekUntil(resp, classifyPeekLimit, classifyPeekTime, firstEventRead)
		return streamError(firstEvent(b))
	case "application/json", "application/graphql-response+json":
		b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
		return graphQLThrottle(b)
	}
	return Verdict{}, false
}

// graphQLThrottle reads a GraphQL response whose errors say it was
// throttled, which Shopify and GitHub answer with status 200: Shopify's
// extensions.code THROTTLED, waiting (requestedQueryCost −
// currentlyAvailable) / restoreRate from extensions.cost.throttleStatus;
// GitHub's type RATE_LIMITED, whose wait its headers give. A body cut short
// is searched as text for the codes.
func graphQLThrottle(b []byte) (Verdict, bool) {
	throttled := Verdict{Class: Throttled, Reason: "rate limited"}
	var doc struct {
		Errors []struct {
			Type       string `json:"type"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
		Extensions struct {
			Cost struct {
				Requested float64 `json:"requestedQueryCost"`
				Throttle  struct {
					Available   float64 `json:"currentlyAvailable"`
					RestoreRate float64 `json:"restoreRate"`
				} `json:"throttleStatus"`
			} `json:"cost"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		if !bytes.Contains(b, []byte(`"errors"`)) {
			return Verdict{}, false
		}
		for _, key := range []string{`"code"`, `"type"`} {
			found := false
			eachMemberInText(b, key, func(v string, quoted bool) bool {
				found = quoted && (v == "THROTTLED" || v == "RATE_LIMITED")
				return !found
			})
			if found {
				return throttled, true
			}
		}
		return Verdict{}, false
	}
	for _, e := range doc.Errors {
		switch {
		case e.Extensions.Code == "THROTTLED":
			c := doc.Extensions.Cost
			if rate := c.Throttle.RestoreRate; rate > 0 && c.Requested > c.Throttle.Available {
				if s := (c.Requested - c.Throttle.Available) / rate; s < float64(maxWholeSeconds) {
					throttled.Wait = time.Duration(math.Ceil(s * float64(time.Second)))
					throttled.Source = sourceThrottleStatus
				}
			}
			return throttled, true
		case e.Type == "RATE_LIMITED":
			return throttled, true
		}
	}
	return Verdict{}, false
}

// firstEventRead reports whether b holds an event stream's first whole
// event.
func firstEventRead(b []byte) bool {
	_, _, ok := firstEvent(b)
	return ok
}

// firstEvent returns the event name and the data of an event stream's first
// event in b, or false when b holds no whole event. As the HTML standard
// dispatches events, a blank line ends one only when it has data: a block
// of comments (": ping", a proxy's keep-alive) or of other fields is passed
// over. Data lines are joined with "\n".
func firstEvent(b []byte) (name, data string, ok bool) {
	var datas []string
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			return "", "", false // the event is cut short
		}
		line := string(b[:i])
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
		}
		b = b[i+1:]
		if line == "" {
			if len(datas) > 0 {
				return name, strings.Join(datas, "\n"), true
			}
			name = "" // a block with no data dispatches nothing
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			datas = append(datas, value)
		}
	}
	return "", "", false
}

// streamError classifies a stream whose first event is an error as its
// non-stream equivalent: Anthropic's event "error" with an error.type of
// overloaded_error (529), rate_limit_error (429) or api_error (500); an
// OpenAI-style first data that is {"error": {...}}, by its code or type.
// A stream that opens with anything else is not read further.
func streamError(name, data string, ok bool) (Verdict, bool) {
	if !ok || !strings.Contains(data, `"error"`) {
		return Verdict{}, false
	}
	var doc struct {
		Type  string `json:"type"`
		Error *struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(data), &doc) != nil || doc.Error == nil {
		return Verdict{}, false
	}
	if name != "error" && name != "" && doc.Type != "error" {
		return Verdict{}, false // a named event that is no error event
	}
	kind := doc.Error.Type
	if code, ok := doc.Error.Code.(string); ok && code != "" {
		kind = code
	}
	switch kind {
	case "overloaded_error":
		return Verdict{Class: Throttled, Reason: "overloaded"}, true
	case "rate_limit_error", "rate_limit_exceeded":
		return Verdict{Class: Throttled, Reason: "rate limited"}, true
	case "insufficient_quota":
		return Verdict{Class: Terminal, Reason: "billing"}, true
	case "api_error", "server_error":
		return Verdict{Class: Ambiguous, Reason: "server error"}, true
	}
	return Verdict{}, false
}
