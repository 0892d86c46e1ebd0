package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Delivery is what Deliver did.
type Delivery struct {
	Key     string
	Already bool // the object was there: nothing generated, nothing sent
	Bytes   int64
}

// RejectedError is a response that no wait fixes (billing, trial, access),
// with the start of the body the store sent.
type RejectedError struct {
	Status int
	Code   string
	Body   []byte
	Err    error
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("object store rejected the upload: %d %s\n%s", e.Status, e.Code, e.Body)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// Deliver puts the image of tenant's job at its stable key, unless it is
// there already. It validates the ids before anything else, generates the
// image only if none is staged, and keeps the staged image until the
// store has confirmed it, so a failed or deferred delivery is resumed
// without generating again. heed retries 429 and 503 SlowDown on the PUT;
// a wait that does not fit ctx comes back as a *heed.DeferredError.
func (u *Uploader) Deliver(ctx context.Context, tenant, job string) (Delivery, error) {
	key, err := objectKey(tenant, job)
	if err != nil {
		return Delivery{}, err
	}
	d := Delivery{Key: key}

	exists, err := u.exists(ctx, key)
	if err != nil || exists {
		d.Already = exists
		return d, err
	}

	img, err := u.stage.open(ctx, tenant, job, u.gen)
	if err != nil {
		return d, err
	}
	defer img.Close()
	cl := &call{body: img, bodySize: img.size}
	_, err = u.s3.PutObject(withCall(ctx, cl), &s3.PutObjectInput{
		Bucket:        aws.String(u.bucket),
		Key:           aws.String(key),
		Body:          img.File,
		ContentLength: aws.Int64(img.size),
		ContentType:   aws.String("image/png"),
		// A checksum given in a header keeps the body as the file's own
		// bytes; otherwise, over TLS, the SDK streams aws-chunked with a
		// trailing checksum, which only buffering can replay.
		ChecksumSHA256: aws.String(img.sha256),
		// Never overwrite: a second writer of the same key gets 412.
		IfNoneMatch: aws.String("*"),
	})
	var re *smithyhttp.ResponseError
	switch {
	case errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed:
		// The key was written meanwhile: by another worker, or by an
		// attempt of ours whose response was lost before heed resent it.
		d.Already = true
	case err != nil:
		return d, rejected(err, cl)
	default:
		d.Bytes = img.size
	}
	return d, u.stage.done(tenant, job)
}

// exists reports whether key is in the bucket, with HEAD.
func (u *Uploader) exists(ctx context.Context, key string) (bool, error) {
	cl := &call{}
	_, err := u.s3.HeadObject(withCall(ctx, cl), &s3.HeadObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(key)})
	var re *smithyhttp.ResponseError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound:
		return false, nil
	}
	return false, rejected(err, cl)
}

// rejected turns an SDK error for a 4xx response that no wait fixes into a
// *RejectedError that shows the body; other errors (a deferral, a 503 that
// outlasted heed's attempts) pass as they are.
func rejected(err error, cl *call) error {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	if s := re.HTTPStatusCode(); s < 400 || s >= 500 || s == http.StatusTooManyRequests || s == http.StatusRequestTimeout {
		return err // retryable: heed used up its attempts
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return &RejectedError{Status: re.HTTPStatusCode(), Code: code, Body: cl.errBody, Err: err}
}
