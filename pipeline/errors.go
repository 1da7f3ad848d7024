package pipeline

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// NewBadSiteDataError is the error a site activity returns when the site's
// own data is unusable (wrong feature count, NaN, one class only, empty
// file, missing label column). It is non-retryable: retrying cannot fix the
// data, so the round records the site as dropped with this text at once
// instead of burning its deadline on retries. line <= 0 omits the line.
func NewBadSiteDataError(site, file string, line int, format string, args ...any) error {
	where := file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	msg := fmt.Sprintf("site %s: %s: %s", site, where, fmt.Sprintf(format, args...))
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeBadSiteData, nil)
}
