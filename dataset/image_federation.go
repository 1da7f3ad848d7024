package dataset

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// An image federation holds, for each site, its training and test images
// as IDX files (the format of MNIST and Fashion-MNIST, ReadIDX):
//
//	<site>_train-images.idx  <site>_train-labels.idx
//	<site>_test-images.idx   <site>_test-labels.idx
//
// and federation.json (ImageManifest). A site's own directory may hold the
// same files without the "<site>_" prefix. Pixels stay bytes on disk (a
// 28×28 image is 784 bytes, a quarter of float32) and are scaled to [0, 1]
// when read.

// Image file suffixes of one split.
const (
	imagesSuffix = "-images.idx"
	labelsSuffix = "-labels.idx"
)

// ImageFiles returns the image and label file names of one split of site
// in a federation directory ("site3_train-images.idx",
// "site3_train-labels.idx").
func ImageFiles(site, split string) (images, labels string) {
	return site + "_" + split + imagesSuffix, site + "_" + split + labelsSuffix
}

// IsImageSite reports whether dir holds site's training images, either as
// a federation directory or as the site's own.
func IsImageSite(dir, site string) bool {
	_, _, err := imageSplitFiles(dir, site, TrainSplit)
	return err == nil
}

// imageSplitFiles finds the IDX files of one split: the federation names
// first, then the site directory's ("train-images.idx"); either may carry
// a ".gz" suffix.
func imageSplitFiles(dir, site, split string) (images, labels string, err error) {
	var tried []string
	for _, prefix := range []string{site + "_", ""} {
		for _, gz := range []string{"", ".gz"} {
			im := filepath.Join(dir, prefix+split+imagesSuffix+gz)
			lb := filepath.Join(dir, prefix+split+labelsSuffix+gz)
			if isFile(im) && isFile(lb) {
				return im, lb, nil
			}
			tried = append(tried, prefix+split+imagesSuffix+gz)
		}
	}
	return "", "", &SiteDataError{Site: site, File: dir,
		Msg: fmt.Sprintf("no %s images: none of %v (with its -labels.idx file) exists", split, tried)}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// ImageSiteData is one site's training and test images, validated.
type ImageSiteData struct {
	Site        string
	Train, Test *Images
	// Files are the four paths read: train images and labels, test images
	// and labels.
	Files [4]string
}

// LoadImageSite reads site's training and test images from dir (a
// federation directory or the site's own; see ImageFiles). Every problem
// a user can cause is a *SiteDataError naming the site and the file: a
// missing file, a malformed IDX file (with its byte offset), images of a
// different shape in the two splits, a label not below classes (when
// classes > 0), and a training split of a single class.
func LoadImageSite(dir, site string, classes int) (*ImageSiteData, error) {
	d := &ImageSiteData{Site: site}
	for i, split := range []string{TrainSplit, TestSplit} {
		im, lb, err := imageSplitFiles(dir, site, split)
		if err != nil {
			return nil, err
		}
		d.Files[2*i], d.Files[2*i+1] = im, lb
		images, err := ReadIDX(im, lb)
		if err != nil {
			file, msg := im, err.Error()
			var fe *FormatError
			if errors.As(err, &fe) {
				file, msg = fe.File, fmt.Sprintf("byte offset %d: %s", fe.Offset, fe.Msg)
			}
			return nil, &SiteDataError{Site: site, File: file, Msg: msg, Err: err}
		}
		if classes > 0 {
			for k, y := range images.Labels {
				if y >= classes {
					return nil, &SiteDataError{Site: site, File: lb, Line: k + 1,
						Msg: fmt.Sprintf("label of image %d is not below the campaign's %d classes (hyperparameter classes)", k, classes)}
				}
			}
			images.Classes = classes
		}
		if split == TrainSplit {
			d.Train = images
		} else {
			d.Test = images
		}
	}
	if d.Train.H != d.Test.H || d.Train.W != d.Test.W || d.Train.C != d.Test.C {
		return nil, &SiteDataError{Site: site, File: d.Files[2],
			Msg: fmt.Sprintf("test images are %dx%dx%d, training images %dx%dx%d", d.Test.H, d.Test.W, d.Test.C, d.Train.H, d.Train.W, d.Train.C)}
	}
	first := d.Train.Labels[0]
	if !slices.ContainsFunc(d.Train.Labels, func(y int) bool { return y != first }) {
		return nil, &SiteDataError{Site: site, File: d.Files[1], Msg: "every training image has the same label; a classifier needs at least two classes"}
	}
	return d, nil
}

// ImageSite is one generated site of an image federation.
type ImageSite struct {
	Name        string
	Train, Test *Images
}

// ImageFederationOptions configures PartitionImages.
type ImageFederationOptions struct {
	// Sites is the number of sites K.
	Sites int
	// PerSite is the mean number of training images per site: a pool of
	// Sites·PerSite images drawn from the training set is split among the
	// sites by Dirichlet(Alpha) over classes, so sites differ in size
	// and label mix (issue 13's anchor: 10 × 600 images).
	PerSite int
	// Alpha is the Dirichlet concentration α (0.1: few classes per site;
	// 0.5: moderate skew).
	Alpha float64
	// TestFraction sets each site's test size to this fraction of its
	// training images (at least MinTest), drawn from the test set with the
	// site's class proportions, so that a site is scored on the
	// distribution it trains on.
	TestFraction float64
	MinTest      int
	Seed         uint64
}

// PartitionImages splits train among opt.Sites sites as
// ImageFederationOptions describes and gives each a test set drawn from
// test with its class proportions (without repetition within a site;
// different sites' test sets may share images). Sites are named site0,
// site1, …; everything random comes from PCG generators seeded with
// opt.Seed, so a seed always gives the same federation.
func PartitionImages(train, test *Images, opt ImageFederationOptions) ([]ImageSite, error) {
	if err := checkSplit(train, test, opt.Sites, opt.PerSite, 2, opt.TestFraction); err != nil {
		return nil, err
	}
	if opt.Sites*opt.PerSite > train.N {
		return nil, fmt.Errorf("dataset: %d sites × %d images need more than the %d training images", opt.Sites, opt.PerSite, train.N)
	}
	classes := max(train.Classes, test.Classes)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x696d616765666564)) // "imagefed"
	pool := rng.Perm(train.N)[:opt.Sites*opt.PerSite]
	slices.Sort(pool)
	poolLabels := make([]int, len(pool))
	for i, j := range pool {
		poolLabels[i] = train.Labels[j]
	}
	// Every site gets two classes at least: a site's worker refuses a
	// training split of one class (LoadImageSite).
	parts, err := dirichletPartition(poolLabels, classes, opt.Sites, opt.Alpha, 2, 2, opt.Seed)
	if err != nil {
		return nil, err
	}
	testByClass := make([][]int, classes)
	for i, y := range test.Labels {
		testByClass[y] = append(testByClass[y], i)
	}
	sites := make([]ImageSite, opt.Sites)
	for k, part := range parts {
		idx := make([]int, len(part))
		count := make([]int, classes)
		for i, p := range part {
			idx[i] = pool[p]
			count[train.Labels[idx[i]]]++
		}
		nTest := max(opt.MinTest, int(math.Round(opt.TestFraction*float64(len(idx)))))
		var testIdx []int
		// Largest-remainder apportionment of nTest over the site's classes.
		quota := make([]int, classes)
		rem := make([]float64, classes)
		given := 0
		for c := range classes {
			exact := float64(nTest) * float64(count[c]) / float64(len(idx))
			quota[c] = int(exact)
			rem[c] = exact - float64(quota[c])
			given += quota[c]
		}
		order := make([]int, classes)
		for c := range order {
			order[c] = c
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case rem[a] > rem[b]:
				return -1
			case rem[a] < rem[b]:
				return 1
			}
			return 0
		})
		for i := 0; given < nTest; i++ {
			if c := order[i%classes]; count[c] > 0 {
				quota[c]++
				given++
			}
		}
		for c := range classes {
			avail := slices.Clone(testByClass[c])
			rng.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
			testIdx = append(testIdx, avail[:min(quota[c], len(avail))]...)
		}
		slices.Sort(testIdx)
		sites[k] = ImageSite{Name: fmt.Sprintf("site%d", k), Train: train.Subset(idx), Test: test.Subset(testIdx)}
		sites[k].Train.Classes, sites[k].Test.Classes = classes, classes
	}
	return sites, nil
}

// checkSplit checks what splitting train among sites with test sets from
// test needs: a site at least, at least minPerSite images per site, a
// positive test fraction, and the two sets' images of one shape.
func checkSplit(train, test *Images, sites, perSite, minPerSite int, testFraction float64) error {
	switch {
	case sites < 1:
		return fmt.Errorf("dataset: %d sites: want at least 1", sites)
	case perSite < minPerSite:
		return fmt.Errorf("dataset: %d images per site: want at least %d", perSite, minPerSite)
	case !(testFraction > 0) || math.IsInf(testFraction, 0):
		return fmt.Errorf("dataset: test fraction %v: want a positive number", testFraction)
	case train.H != test.H || train.W != test.W || train.C != test.C:
		return fmt.Errorf("dataset: test images are %dx%dx%d, training images %dx%dx%d", test.H, test.W, test.C, train.H, train.W, train.C)
	}
	return nil
}

// ImageManifest is federation.json of an image federation: its source,
// how it was split, and every site's sizes and label counts.
type ImageManifest struct {
	Generator string              `json:"generator"`
	Seed      uint64              `json:"seed"`
	Alpha     float64             `json:"alpha"`
	PerSite   int                 `json:"per_site"`
	Shape     [3]int              `json:"shape"` // rows, columns, channels
	Classes   int                 `json:"classes"`
	Sites     []ImageSiteManifest `json:"sites"`
}

// ImageSiteManifest describes one site of an ImageManifest.
type ImageSiteManifest struct {
	Name        string `json:"name"`
	NTrain      int    `json:"n_train"`
	NTest       int    `json:"n_test"`
	TrainLabels []int  `json:"train_labels"` // images per class
}

// WriteImageFederation writes sites into dir (created if missing) as IDX
// files (see ImageFiles) and man, completed with the sites' sizes, as
// federation.json. Pixels are written as round(255·v); files read by
// ReadIDX round-trip exactly. The bytes depend only on the arguments.
func WriteImageFederation(dir string, sites []ImageSite, man ImageManifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write image federation: %w", err)
	}
	man.Sites = nil
	for _, s := range sites {
		for _, sp := range []struct {
			split string
			im    *Images
		}{{TrainSplit, s.Train}, {TestSplit, s.Test}} {
			imName, lbName := ImageFiles(s.Name, sp.split)
			if err := writeIDXImages(filepath.Join(dir, imName), sp.im); err != nil {
				return fmt.Errorf("write image federation: %s: %w", imName, err)
			}
			if err := writeIDXLabels(filepath.Join(dir, lbName), sp.im.Labels); err != nil {
				return fmt.Errorf("write image federation: %s: %w", lbName, err)
			}
		}
		counts := make([]int, man.Classes)
		for _, y := range s.Train.Labels {
			if y < len(counts) {
				counts[y]++
			}
		}
		man.Sites = append(man.Sites, ImageSiteManifest{Name: s.Name, NTrain: s.Train.N, NTest: s.Test.N, TrainLabels: counts})
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return fmt.Errorf("write image federation: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write image federation: %w", err)
	}
	return nil
}

func writeIDXImages(path string, im *Images) error {
	dims := []uint32{uint32(im.N), uint32(im.H), uint32(im.W)}
	if im.C != 1 {
		dims = append(dims, uint32(im.C))
	}
	data := make([]byte, len(im.Pixels))
	for i, v := range im.Pixels {
		data[i] = byte(math.Round(float64(v) * 255))
	}
	return writeIDX(path, dims, data)
}

func writeIDXLabels(path string, labels []int) error {
	data := make([]byte, len(labels))
	for i, y := range labels {
		if y < 0 || y > 255 {
			return fmt.Errorf("label %d of image %d does not fit a byte", y, i)
		}
		data[i] = byte(y)
	}
	return writeIDX(path, []uint32{uint32(len(labels))}, data)
}

// writeIDX writes an IDX file of unsigned bytes (see ReadIDX).
func writeIDX(path string, dims []uint32, data []byte) error {
	buf := make([]byte, 0, 4+4*len(dims)+len(data))
	buf = append(buf, 0, 0, idxUnsignedByte, byte(len(dims)))
	for _, d := range dims {
		buf = binary.BigEndian.AppendUint32(buf, d)
	}
	buf = append(buf, data...)
	return os.WriteFile(path, buf, 0o644)
}
