package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// decodeBody returns the object bytes of a PUT whose wire body is wire,
// checking its length. The SDK sends aws-chunked with a trailing checksum
// when it computes the checksum itself over TLS; the fake decodes that
// (unsigned chunks only) and checks the trailing CRC32. It returns a
// message saying what is wrong, or "".
func decodeBody(r *http.Request, wire []byte) ([]byte, string) {
	if r.ContentLength != int64(len(wire)) {
		return nil, fmt.Sprintf("Content-Length %d, body %d bytes", r.ContentLength, len(wire))
	}
	if !strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
		return wire, ""
	}
	br := bufio.NewReader(bytes.NewReader(wire))
	var body []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, "aws-chunked: " + err.Error()
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil {
			return nil, "aws-chunked: bad chunk size"
		}
		if size == 0 {
			break
		}
		chunk := make([]byte, size+2)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return nil, "aws-chunked: short chunk"
		}
		body = append(body, chunk[:size]...)
	}
	trailer, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return nil, "aws-chunked: bad trailer"
	}
	if want := r.Header.Get("X-Amz-Decoded-Content-Length"); want != "" && want != strconv.Itoa(len(body)) {
		return nil, "x-amz-decoded-content-length does not match the body"
	}
	if sum := trailer.Get("X-Amz-Checksum-Crc32"); sum != "" {
		var b [4]byte
		crc := crc32.ChecksumIEEE(body)
		b[0], b[1], b[2], b[3] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
		if sum != base64.StdEncoding.EncodeToString(b[:]) {
			return nil, "trailing x-amz-checksum-crc32 does not match the body"
		}
	}
	return body, ""
}
