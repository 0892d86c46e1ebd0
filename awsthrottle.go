// AWS throttles: the 400s by which AWS services say "too many requests",
// named by an error code in a header or the body, as the AWS SDKs read them.

package heed

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// awsThrottleCodes are the error codes the AWS SDKs retry as throttling
// (aws-sdk-go-v2 aws/retry DefaultThrottleErrorCodes; smithy's
// THROTTLING_ERROR_CODES).
var awsThrottleCodes = map[string]bool{
	"Throttling":                             true,
	"ThrottlingException":                    true,
	"ThrottledException":                     true,
	"RequestThrottledException":              true,
	"TooManyRequestsException":               true,
	"ProvisionedThroughputExceededException": true,
	"TransactionInProgressException":         true,
	"RequestLimitExceeded":                   true,
	"BandwidthLimitExceeded":                 true,
	"LimitExceededException":                 true,
	"RequestThrottled":                       true,
	"SlowDown":                               true,
	"PriorRequestNotComplete":                true,
	"EC2ThrottledException":                  true,
}

// awsThrottled reports whether a 400 is an AWS throttle: its
// x-amzn-ErrorType header, or its body's error code (the JSON protocols'
// __type or code, the query and REST-XML protocols' <Code>), names one of
// awsThrottleCodes. A body is peeked only when the header names no code
// and the Content-Type is JSON or XML.
func awsThrottled(resp *http.Response) bool {
	if v := resp.Header["X-Amzn-Errortype"]; len(v) > 0 {
		return awsThrottleCodes[awsErrorCode(v[0])]
	}
	ct := respContentType(resp)
	switch {
	case strings.Contains(ct, "json"):
		b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
		return awsThrottleCodes[awsJSONCode(b)]
	case strings.Contains(ct, "xml"):
		b, _ := peekWithin(resp, classifyPeekLimit, classifyPeekTime)
		return awsThrottleCodes[awsXMLCode(b)]
	}
	return false
}

// awsErrorCode returns the code an AWS error type names: the part after a
// '#' namespace, before a ':' suffix, as "aws.protocoltests#FooError:http://..."
// names FooError.
func awsErrorCode(s string) string {
	if len(s) > 256 {
		return ""
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// awsJSONCode returns the error code of an AWS JSON error body: __type,
// else code (or Code), read by awsErrorCode; "" when there is none. A body
// cut short is searched as text.
func awsJSONCode(b []byte) string {
	var doc struct {
		Type string `json:"__type"`
		Code string `json:"code"` // or "Code": the match ignores case
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		for _, key := range []string{`"__type"`, `"code"`, `"Code"`} {
			if s, ok := memberInText(b, key, true); ok {
				return awsErrorCode(s)
			}
		}
		return ""
	}
	for _, c := range []string{doc.Type, doc.Code} {
		if c != "" {
			return awsErrorCode(c)
		}
	}
	return ""
}

// awsXMLCode returns the text of the first <Code> element of an AWS XML
// error body, or "".
func awsXMLCode(b []byte) string {
	_, rest, ok := bytes.Cut(b, []byte("<Code>"))
	if !ok {
		return ""
	}
	code, _, ok := bytes.Cut(rest, []byte("</Code>"))
	if !ok || len(code) > 128 {
		return ""
	}
	return string(bytes.TrimSpace(code))
}
