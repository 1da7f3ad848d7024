package activities

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// keep is where a site keeps, on its own premises, what it must not send:
// under secure aggregation its trained model, control-variate update and
// method state between its activities (they reach the server only inside
// a group's masked sum), and its record of what it revealed and masked in
// each run. It is a directory beside the site's secret (WithKeep), of
// files named like the objects' S3 keys, each written whole (a temporary
// file renamed into place and fsynced), so a worker killed mid-write
// leaves the old file or the new one. References to kept objects carry
// pipeline.KeptBucket(site) and the object's sha256, which every read
// checks.
type keep struct {
	dir  string
	site string
}

// WithKeep gives the site the directory where it keeps what secure
// aggregation must not send (keep); a site without one refuses campaigns
// under secure_aggregation "secagg+". The worker puts it beside the
// site's secret (<secret-dir>/<site>.keep).
func (s *Site) WithKeep(dir string) *Site {
	s.keep = &keep{dir: dir, site: s.name}
	return s
}

// path is the file of key: key's segments under the directory, refusing a
// key that could leave it.
func (k *keep) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("site %s: kept object %q: not a relative key", k.site, key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("site %s: kept object %q: not a clean key", k.site, key)
		}
	}
	return filepath.Join(k.dir, filepath.FromSlash(key)), nil
}

// put writes b at key and returns its reference.
func (k *keep) put(key string, b []byte) (pipeline.ArtifactRef, error) {
	p, err := k.path(key)
	if err != nil {
		return pipeline.ArtifactRef{}, err
	}
	if err := writeWhole(p, b); err != nil {
		return pipeline.ArtifactRef{}, fmt.Errorf("site %s: keep %s: %w", k.site, key, err)
	}
	sum := sha256.Sum256(b)
	return pipeline.ArtifactRef{Bucket: pipeline.KeptBucket(k.site), Key: key, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}, nil
}

// get reads the kept object ref points at and checks its sha256.
func (k *keep) get(ref pipeline.ArtifactRef) ([]byte, error) {
	if ref.Bucket != pipeline.KeptBucket(k.site) {
		return nil, fmt.Errorf("site %s: %s is kept by %s, not by this site", k.site, ref.Key, strings.TrimPrefix(ref.Bucket, "site:"))
	}
	p, err := k.path(ref.Key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("site %s: kept %s: %w (the site's keep %s must persist between the activities of a round)", k.site, ref.Key, err, k.dir)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != ref.SHA256 || int64(len(b)) != ref.Size {
		return nil, fmt.Errorf("site %s: kept %s: %w: expected sha256 %s (%d bytes)", k.site, ref.Key, store.ErrIntegrity, ref.SHA256, ref.Size)
	}
	return b, nil
}

// record returns what was recorded at key (nil, nil when nothing was),
// for the site's records of what it revealed and masked.
func (k *keep) record(key string) ([]byte, error) {
	p, err := k.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// prune removes the kept objects of campaign's rounds before round
// (their files under campaigns/<campaign>/round-NNNN/): once a site trains
// round r, nothing of rounds before r − 1 is read again (a round reads the
// state of the one before). The records of what it revealed stay.
func (k *keep) prune(campaign string, round int) error {
	root := filepath.Join(k.dir, filepath.FromSlash(artifact.CampaignPrefix(campaign)))
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		r, ok := artifact.ParseRoundPrefix(campaign, artifact.CampaignPrefix(campaign)+e.Name()+"/")
		if !ok || r >= round {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// writeWhole writes b to path through a temporary file renamed into
// place, both fsynced, so that a crash leaves the old file or the new one.
func writeWhole(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".keep-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
