package reference

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ptopofl/ptopofl/internal/console"
)

// Console returns docs/reference/console.md: the addresses `starter
// console` answers (console.Routes) and the JSON it serves under /api/,
// read from the declarations of internal/console under root, the
// repository's root directory.
func Console(root string) (string, error) {
	src, err := parseDir(filepath.Join(root, "internal", "console"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/console by `make reference`; do not edit. -->\n\n")
	b.WriteString("# The campaign console: addresses and JSON\n\n")
	b.WriteString("`starter console` ([how-to](../how-to/console.md)) answers these addresses, GET and HEAD only;\n")
	b.WriteString("scripts and bookmarks may rely on them. Every page is built from the JSON of its `/api/` address.\n")
	b.WriteString("A bad address answers 404 (`{\"error\": …}` under `/api/`); Temporal or S3 failing, 502.\n")
	b.WriteString("`make test` fails when this page is stale.\n\n")
	b.WriteString("| address | what |\n|---|---|\n")
	for _, r := range console.Routes() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", r.Pattern, strings.ReplaceAll(r.What, "|", `\|`))
	}
	b.WriteString("\n## JSON\n\n")
	b.WriteString("Each section is generated from the Go declaration named in its heading. `CampaignDetail` holds\n")
	b.WriteString("the keys of `CampaignRow` too, `SweepDetail` those of `SweepRow`, `ComparedCampaign` those of\n")
	b.WriteString("`CampaignRow`. Types of package `pipeline` (`SiteDrop`, `Release`) are the manifest's, in\n")
	b.WriteString("[formats.md](formats.md); `/api/campaigns/<campaign>/verify` answers `campaign.VerifyReport`, as\n")
	b.WriteString("`starter verify --format json` prints it. Numbers absent from a manifest are `null` or left out.\n\n")
	if err := src.structs(&b, "json", "CampaignRow", "CampaignDetail", "SweepRow", "SweepDetail", "Comparison"); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}
