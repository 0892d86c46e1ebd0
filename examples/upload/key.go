package main

import (
	"errors"
	"fmt"
	"regexp"
)

// The ids that may appear in an object key. Anything else (slashes, dots,
// percent signs, upper case, spaces, control characters, non-ASCII) is
// refused before any byte moves, so a tenant id can never climb out of its
// own prefix or alias another tenant's.
var (
	tenantID = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
	jobID    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
)

// ErrRefused is matched by every error for an id that failed validation.
var ErrRefused = errors.New("refused")

// objectKey returns the stable, tenant-scoped key of a job's image:
// tenants/{tenant}/jobs/{job}/image.png. It refuses ids outside the
// allowlist.
func objectKey(tenant, job string) (string, error) {
	if !tenantID.MatchString(tenant) {
		return "", fmt.Errorf("tenant id %q: %w: want lower-case letters, digits and inner hyphens, at most 63", tenant, ErrRefused)
	}
	if !jobID.MatchString(job) {
		return "", fmt.Errorf("job id %q: %w: want letters, digits, '_' and '-', at most 128", job, ErrRefused)
	}
	return "tenants/" + tenant + "/jobs/" + job + "/image.png", nil
}
