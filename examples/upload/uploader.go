package main

import (
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/heed-go/heed"
	"go.uber.org/zap"
)

// defaultPolicy is how heed treats object-storage calls. S3's SlowDown
// carries no Retry-After, so the backoff decides; the SigV4 signature of a
// resent request is still valid because no single wait exceeds MaxWait,
// well inside S3's 15-minute clock-skew window.
var defaultPolicy = heed.Policy{
	Name:    "s3",
	Backoff: heed.EqualJitter(200*time.Millisecond, 10*time.Second),
	MaxWait: 30 * time.Second,
}

// Config says where images go and how.
type Config struct {
	Endpoint  string // S3 or S3-compatible base URL; path-style addressing
	Region    string
	Bucket    string
	AccessKey string
	SecretKey string
	StageDir  string    // where generated images wait until delivered
	Generate  Generator // makes an image; called at most once per job
	Policy    heed.Policy
	Log       *zap.Logger
	Base      http.RoundTripper // the transport under heed; nil: a clone of http.DefaultTransport
}

// Uploader delivers generated images to object storage.
type Uploader struct {
	s3     *s3.Client
	bucket string
	stage  staging
	gen    Generator
	heed   *heed.Transport
}

// NewUploader returns an Uploader whose S3 client sends through heed, with
// the SDK's own retryer off so that heed alone decides what is retried and
// how long to wait.
func NewUploader(cfg Config) *Uploader {
	base := cfg.Base
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	t := heed.New(base, heed.WithPolicy(cfg.Policy), heed.WithLogger(cfg.Log))
	client := s3.New(s3.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(cfg.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		HTTPClient:   callClient{&http.Client{Transport: t}},
		Retryer:      aws.NopRetryer{},
		// As config.LoadDefaultConfig sets it: checksums on every upload.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
	return &Uploader{s3: client, bucket: cfg.Bucket, stage: staging{cfg.StageDir}, gen: cfg.Generate, heed: t}
}

// Close closes idle connections.
func (u *Uploader) Close() { u.heed.CloseIdleConnections() }
