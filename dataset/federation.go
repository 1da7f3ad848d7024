package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
)

// Federation is a federation directory as the site workers read it: one
// "<site>_train" and "<site>_test" file per site (CSV or parquet, see
// SiteFile), optionally "from-round-NNNN/" sub-directories with sites'
// data from round NNNN on (ShiftDir), and optionally federation.json
// (WriteFederation writes all of these).
type Federation struct {
	// Dir is the directory, absolute.
	Dir string
	// Sites are the site names, in federation.json's order when that file
	// lists exactly the sites found, otherwise in natural order ("site2"
	// before "site10"). The order matters: the paper preset seeds sites by
	// position.
	Sites []string
	// Files are the site files, relative to Dir with "/" separators: for
	// each site in order its train and test file, then those of every
	// shift directory in increasing round order.
	Files []string
	// ShiftRounds are the rounds of the from-round-NNNN directories that
	// hold some site's training split, increasing.
	ShiftRounds []int
	// Images reports that the sites hold images (ImageFiles), for deep
	// models, rather than tabular rows.
	Images bool
	// Hash is the hex sha256 over Files: a line "<file> <sha256 of its
	// bytes>\n" for each. For a federation without shift directories and
	// with CSV files it equals the hash `starter` has always given a
	// federation, so campaign names derived from it do not change.
	Hash string
}

// DiscoverFederation finds the sites of the federation directory dir and
// hashes their files. A site is a "<site>_train.csv" or
// "<site>_train.parquet" file whose "<site>_test" split exists too; a site
// with both a CSV and a parquet file of a split is read from the CSV file,
// as LoadSite does. Every site name must satisfy artifact.ValidateName.
// Errors name the directory and the file or site at fault.
func DiscoverFederation(dir string) (*Federation, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("federation %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("federation %s: no <site>_train.csv or <site>_train.parquet files: %w", dir, err)
	}
	seen := map[string]bool{}
	var sites []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		site, ok := strings.CutSuffix(name, "_"+TrainSplit+".csv")
		if !ok {
			site, ok = strings.CutSuffix(name, "_"+TrainSplit+".parquet")
		}
		if !ok {
			// An image site (ImageFiles).
			site, ok = strings.CutSuffix(strings.TrimSuffix(name, ".gz"), "_"+TrainSplit+imagesSuffix)
		}
		if !ok || seen[site] {
			continue
		}
		if err := artifact.ValidateName(site); err != nil {
			return nil, fmt.Errorf("federation %s: file %s: site name %w", dir, name, err)
		}
		seen[site] = true
		sites = append(sites, site)
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("federation %s: no <site>_train.csv or <site>_train.parquet files", dir)
	}
	sites = orderSites(abs, sites)

	f := &Federation{Dir: abs, Sites: sites}
	for _, site := range sites {
		if _, err := federationFile(abs, site, TrainSplit); err != nil && IsImageSite(abs, site) {
			for _, split := range []string{TrainSplit, TestSplit} {
				im, lb, err := imageSplitFiles(abs, site, split)
				if err != nil {
					return nil, fmt.Errorf("federation %s: %w", dir, err)
				}
				f.Files = append(f.Files, filepath.Base(im), filepath.Base(lb))
			}
			f.Images = true
			continue
		}
		for _, split := range []string{TrainSplit, TestSplit} {
			p, err := federationFile(abs, site, split)
			if err != nil {
				return nil, fmt.Errorf("federation %s: %w", dir, err)
			}
			f.Files = append(f.Files, filepath.Base(p))
		}
	}
	f.ShiftRounds = ShiftRounds(abs)
	slices.Reverse(f.ShiftRounds) // ShiftRounds lists the largest first
	kept := f.ShiftRounds[:0]
	for _, r := range f.ShiftRounds {
		sub := ShiftDir(abs, r)
		n := 0
		for _, site := range sites {
			train, err := federationFile(sub, site, TrainSplit)
			if err != nil {
				continue // this site keeps its data in that round
			}
			test, err := federationFile(sub, site, TestSplit)
			if err != nil {
				return nil, fmt.Errorf("federation %s: %w", dir, err)
			}
			for _, p := range []string{train, test} {
				rel, _ := filepath.Rel(abs, p)
				f.Files = append(f.Files, filepath.ToSlash(rel))
			}
			n++
		}
		if n > 0 {
			kept = append(kept, r)
		}
	}
	f.ShiftRounds = kept
	if f.Hash, err = hashFiles(abs, f.Files); err != nil {
		return nil, fmt.Errorf("federation %s: %w", dir, err)
	}
	return f, nil
}

// federationFile is the file of one split of site in a federation
// directory: "<site>_<split>.csv", else "<site>_<split>.parquet".
func federationFile(dir, site, split string) (string, error) {
	for _, ext := range []string{".csv", ".parquet"} {
		p := filepath.Join(dir, site+"_"+split+ext)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", &SiteDataError{Site: site, File: dir,
		Msg: fmt.Sprintf("no %s split: neither %s_%s.csv nor %s_%s.parquet exists", split, site, split, site, split)}
}

// orderSites returns sites in federation.json's order when dir holds a
// readable manifest listing exactly these sites, else in natural order.
func orderSites(dir string, sites []string) []string {
	var man FederationManifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err == nil && json.Unmarshal(b, &man) == nil && len(man.Sites) == len(sites) {
		present := make(map[string]bool, len(sites))
		for _, s := range sites {
			present[s] = true
		}
		ordered := make([]string, 0, len(sites))
		for _, s := range man.Sites {
			if present[s.Name] {
				ordered = append(ordered, s.Name)
				delete(present, s.Name) // a name listed twice counts once
			}
		}
		if len(ordered) == len(sites) {
			return ordered
		}
	}
	sortNatural(sites)
	return sites
}

// sortNatural sorts names so that a trailing number compares by value
// between names with the same prefix: "site2" before "site10". Other names
// sort as strings; the sort is stable.
func sortNatural(names []string) {
	split := func(s string) (string, int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(s[i:])
		return s[:i], n, err == nil
	}
	sort.SliceStable(names, func(a, b int) bool {
		pa, na, oka := split(names[a])
		pb, nb, okb := split(names[b])
		if oka && okb && pa == pb {
			return na < nb
		}
		return names[a] < names[b]
	})
}

// hashFiles is the hex sha256 over a line "<file> <hex sha256 of its
// bytes>\n" per file, files relative to dir.
func hashFiles(dir string, files []string) (string, error) {
	h := sha256.New()
	for _, name := range files {
		fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return "", err
		}
		sum := sha256.New()
		_, err = io.Copy(sum, fh)
		fh.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		fmt.Fprintf(h, "%s %x\n", name, sum.Sum(nil))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
