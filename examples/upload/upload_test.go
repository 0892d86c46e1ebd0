package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/heed-go/heed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// fastPolicy retries as the real one does, with short backoffs.
var fastPolicy = heed.Policy{Name: "s3", Backoff: heed.Constant(10 * time.Millisecond)}

// env is an uploader wired to a fake store, counting generator runs.
type env struct {
	fake      *fakeS3
	u         *Uploader
	stage     string
	generated atomic.Int32
	image     func(tenant, job string) []byte
}

func newEnv(t *testing.T, tls bool) *env {
	t.Helper()
	e := &env{fake: newFakeS3(tls), stage: t.TempDir()}
	e.image = func(tenant, job string) []byte {
		b, err := placeholder(context.Background(), tenant, job)
		require.NoError(t, err)
		return b
	}
	var base http.RoundTripper
	if tls {
		base = e.fake.srv.Client().Transport.(*http.Transport).Clone()
	}
	e.u = NewUploader(Config{
		Endpoint: e.fake.URL(), Region: "us-east-1", Bucket: "images",
		AccessKey: "AKIDEXAMPLE", SecretKey: "secret", StageDir: e.stage,
		Generate: func(_ context.Context, tenant, job string) ([]byte, error) {
			e.generated.Add(1)
			return e.image(tenant, job), nil
		},
		Policy: fastPolicy, Log: zaptest.NewLogger(t), Base: base,
	})
	t.Cleanup(func() {
		e.u.Close()
		e.fake.Close()
	})
	return e
}

// puts returns the PUT requests the store received.
func (e *env) puts() []s3Request {
	var out []s3Request
	for _, r := range e.fake.Requests() {
		if r.Method == http.MethodPut {
			out = append(out, r)
		}
	}
	return out
}

func statuses(rs []s3Request) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}

func randomImage(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func TestSlowDownIsRetriedWithoutRegenerating(t *testing.T) {
	e := newEnv(t, false)
	e.fake.FailPuts(slowDown(), slowDown())

	d, err := e.u.Deliver(context.Background(), "acme", "job-1")

	require.NoError(t, err)
	assert.Equal(t, "tenants/acme/jobs/job-1/image.png", d.Key)
	assert.False(t, d.Already)
	assert.Equal(t, int32(1), e.generated.Load(), "generator ran once")
	reqs := e.fake.Requests()
	require.NotEmpty(t, reqs)
	assert.Equal(t, http.MethodHead, reqs[0].Method, "HEAD before PUT")
	assert.Equal(t, []int{503, 503, 200}, statuses(e.puts()))
	objs := e.fake.Objects()
	require.Len(t, objs, 1, "one object")
	assert.Equal(t, e.image("acme", "job-1"), objs["images/tenants/acme/jobs/job-1/image.png"])
	assert.NoFileExists(t, filepath.Join(e.stage, "acme", "job-1.png"), "a delivered image leaves the stage")
}

func TestDeliveredJobIsNotSentAgain(t *testing.T) {
	e := newEnv(t, false)
	_, err := e.u.Deliver(context.Background(), "acme", "job-1")
	require.NoError(t, err)
	before := len(e.fake.Requests())

	d, err := e.u.Deliver(context.Background(), "acme", "job-1")

	require.NoError(t, err)
	assert.True(t, d.Already)
	got := e.fake.Requests()[before:]
	require.Len(t, got, 1)
	assert.Equal(t, http.MethodHead, got[0].Method)
	assert.Equal(t, int32(1), e.generated.Load())
}

// The SDK hands heed a body it cannot rewind, so beyond heed's 1 MiB buffer
// the uploader's call gives heed the staged file to resend from.
func TestLargeImageIsResentFromTheStagedFile(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "https"}[tls]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tls)
			big := randomImage(t, 3<<20) // past heed's buffer and the SDK's 100-continue threshold
			e.image = func(string, string) []byte { return big }
			e.fake.FailPuts(slowDown())

			_, err := e.u.Deliver(context.Background(), "acme", "job-big")

			require.NoError(t, err)
			assert.Equal(t, int32(1), e.generated.Load())
			puts := e.puts()
			assert.Equal(t, []int{503, 200}, statuses(puts))
			for _, p := range puts {
				assert.Empty(t, p.Coding, "the body goes as the file's own bytes, not aws-chunked")
			}
			assert.Equal(t, big, e.fake.Objects()["images/tenants/acme/jobs/job-big/image.png"])
		})
	}
}

// What the uploader works around: a plain S3 client over heed cannot retry
// a body past heed's buffer bound, because the SDK's body has neither
// GetBody nor io.ReaderAt; heed sends it once and hands back the 503.
func TestSDKBodyPastTheBufferIsSentOnce(t *testing.T) {
	fake := newFakeS3(false)
	defer fake.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(fake.URL()), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:  &http.Client{Transport: heed.New(base, heed.WithPolicy(fastPolicy))},
		Retryer:     aws.NopRetryer{},
	})
	fake.FailPuts(slowDown())

	_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("images"), Key: aws.String("k"), Body: bytes.NewReader(randomImage(t, 2<<20)),
	})

	require.Error(t, err)
	assert.Contains(t, err.Error(), "SlowDown")
	assert.Len(t, fake.Requests(), 1)
}

// Over TLS, with checksums on (config.LoadDefaultConfig's default) and no
// checksum given, the SDK encodes the body itself as aws-chunked with a
// trailing CRC32. heed buffers those wire bytes (within 1 MiB) and resends
// them as they were, so the trailer still matches.
func TestSDKChunkedBodyIsReplayedAsSent(t *testing.T) {
	fake := newFakeS3(true)
	defer fake.Close()
	base := fake.srv.Client().Transport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(fake.URL()), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:                 &http.Client{Transport: heed.New(base, heed.WithPolicy(fastPolicy))},
		Retryer:                    aws.NopRetryer{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
	fake.FailPuts(slowDown())
	img := randomImage(t, 100<<10)

	_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("images"), Key: aws.String("k"), Body: bytes.NewReader(img),
	})

	require.NoError(t, err)
	reqs := fake.Requests()
	require.Equal(t, []int{503, 200}, statuses(reqs))
	assert.Equal(t, "aws-chunked", reqs[1].Coding)
	assert.Greater(t, reqs[1].Size, len(img), "chunk framing and trailer on the wire")
	assert.Equal(t, img, fake.Objects()["images/k"])
}

func TestTooManyRequestsWaitsAsLongAsAsked(t *testing.T) {
	e := newEnv(t, false)
	e.fake.FailPuts(tooManyRequests(1))

	_, err := e.u.Deliver(context.Background(), "acme", "job-1")

	require.NoError(t, err)
	puts := e.puts()
	require.Equal(t, []int{429, 200}, statuses(puts))
	assert.GreaterOrEqual(t, puts[1].At.Sub(puts[0].At), time.Second, "no attempt before Retry-After")
	assert.Equal(t, int32(1), e.generated.Load())
}

func TestBillingRejectionStopsAtOnce(t *testing.T) {
	for name, rep := range map[string]s3Reply{"402 TrialExpired": trialExpired(), "403 AccountProblem": accountProblem()} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, false)
			e.fake.FailPuts(rep)

			_, err := e.u.Deliver(context.Background(), "acme", "job-1")

			var rej *RejectedError
			require.ErrorAs(t, err, &rej)
			assert.Equal(t, rep.status, rej.Status)
			assert.Equal(t, strings.Fields(name)[1], rej.Code)
			assert.Equal(t, rep.body, string(rej.Body), "the store's body is shown")
			assert.Contains(t, err.Error(), strings.Fields(name)[1])
			assert.Len(t, e.puts(), 1, "no retry")
			assert.Empty(t, e.fake.Objects())
			assert.FileExists(t, filepath.Join(e.stage, "acme", "job-1.png"), "kept for the next run")

			// Once the account is fixed, the next run sends the staged image.
			_, err = e.u.Deliver(context.Background(), "acme", "job-1")
			require.NoError(t, err)
			assert.Equal(t, int32(1), e.generated.Load(), "generator ran once across both runs")
			assert.Len(t, e.fake.Objects(), 1)
		})
	}
}

func TestDeferralKeepsTheStagedImage(t *testing.T) {
	e := newEnv(t, false)
	e.fake.FailPuts(tooManyRequests(30))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()

	_, err := e.u.Deliver(ctx, "acme", "job-1")

	assert.Less(t, time.Since(start), time.Second)
	var deferred *heed.DeferredError
	require.ErrorAs(t, err, &deferred, "found through the SDK's OperationError")
	assert.Equal(t, 429, deferred.Status)
	puts := e.puts()
	require.Len(t, puts, 1)
	assert.False(t, deferred.RetryAt.Before(puts[0].At.Add(30*time.Second)))
	assert.FileExists(t, filepath.Join(e.stage, "acme", "job-1.png"))
}

func TestKeyWrittenMeanwhileIsNotOverwritten(t *testing.T) {
	e := newEnv(t, false)
	other := []byte("written by another worker")
	e.image = func(tenant, job string) []byte {
		e.fake.Put("images/tenants/acme/jobs/job-1/image.png", other) // lands between our HEAD and PUT
		return []byte("ours")
	}

	d, err := e.u.Deliver(context.Background(), "acme", "job-1")

	require.NoError(t, err)
	assert.True(t, d.Already)
	assert.Equal(t, []int{412}, statuses(e.puts()))
	assert.Equal(t, other, e.fake.Objects()["images/tenants/acme/jobs/job-1/image.png"])
}

func TestTenantsStayInTheirOwnPrefix(t *testing.T) {
	e := newEnv(t, false)
	for _, tenant := range []string{"acme", "globex"} {
		_, err := e.u.Deliver(context.Background(), tenant, "job-1")
		require.NoError(t, err)
	}
	objs := e.fake.Objects()
	assert.Len(t, objs, 2)
	assert.Equal(t, e.image("acme", "job-1"), objs["images/tenants/acme/jobs/job-1/image.png"])
	assert.Equal(t, e.image("globex", "job-1"), objs["images/tenants/globex/jobs/job-1/image.png"])
	assert.NotEqual(t, objs["images/tenants/acme/jobs/job-1/image.png"], objs["images/tenants/globex/jobs/job-1/image.png"])
}

func TestOddIDsAreRefusedBeforeAnyByteMoves(t *testing.T) {
	e := newEnv(t, false)
	bad := []struct{ tenant, job string }{
		{"../acme", "job-1"}, {"acme/../globex", "job-1"}, {"..", "job-1"}, {".", "job-1"}, {"", "job-1"},
		{"acme/x", "job-1"}, {`acme\x`, "job-1"}, {"acme%2F..%2Fglobex", "job-1"}, {"ACME", "job-1"},
		{"acme x", "job-1"}, {"acme\n", "job-1"}, {"acme\x00", "job-1"}, {"-acme", "job-1"}, {"acme-", "job-1"},
		{"acmé", "job-1"}, {"acme;rm", "job-1"}, {"acme?x=1", "job-1"}, {"acme#x", "job-1"}, {"acme.globex", "job-1"},
		{strings.Repeat("a", 64), "job-1"}, {"acme", "../job-1"}, {"acme", "a/b"}, {"acme", ""}, {"acme", "job 1"},
		{"acme", "job-1/../../globex"}, {"acme", strings.Repeat("j", 129)},
	}
	for _, b := range bad {
		_, err := e.u.Deliver(context.Background(), b.tenant, b.job)
		assert.ErrorIs(t, err, ErrRefused, "%q/%q", b.tenant, b.job)
	}
	assert.Empty(t, e.fake.Requests(), "no request for a refused id")
	assert.Zero(t, e.generated.Load(), "no image for a refused id")
	entries, err := os.ReadDir(e.stage)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing staged for a refused id")
}

func TestRunDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), nil, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	s := out.String()
	assert.Contains(t, s, "delivered")
	assert.Contains(t, s, "already there: tenants/acme/jobs/job-1/image.png")
	assert.Contains(t, s, "402 TrialExpired")
	assert.Contains(t, s, "<Message>Your free trial has ended.")
	assert.Contains(t, s, `tenant id "../acme": refused`)
}

func TestRunRefusesBadTenantFlag(t *testing.T) {
	fake := newFakeS3(false)
	defer fake.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-endpoint", fake.URL(), "-bucket", "images", "-tenant", "../globex", "-job", "j1", "-stage", t.TempDir()}, &out, &errOut)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut.String(), "refused")
	assert.Empty(t, fake.Requests())
}
