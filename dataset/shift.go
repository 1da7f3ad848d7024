package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ShiftDirPrefix names the sub-directories of a federation (or site)
// directory that hold data replacing a site's files from a given round on:
// "from-round-0006/<site>_train.csv" is the site's training split from
// round 6 on. A site without such files keeps its original data. This is
// how a continual scenario, where a site's data really change during a
// campaign, is laid out on disk.
const ShiftDirPrefix = "from-round-"

// ShiftDir returns the sub-directory of dir holding a site's data from
// round on, "<dir>/from-round-0006".
func ShiftDir(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%04d", ShiftDirPrefix, round))
}

// RoundDir returns the directory LoadSite should read site's data from in
// round (1-based): the ShiftDir with the largest round not after round that
// holds the site's training split, or dir itself.
func RoundDir(dir, site string, round int) string {
	return RoundDirAmong(dir, site, round, ShiftRounds(dir))
}

// ShiftRounds lists the rounds of dir's ShiftDir sub-directories, largest
// first; none when dir cannot be read. It is the directory listing
// RoundDir needs, for a caller that keeps it between rounds (a federation
// directory with hundreds of sites is hundreds of entries to list per call).
func ShiftRounds(dir string) []int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var starts []int
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ShiftDirPrefix) {
			continue
		}
		r, err := strconv.Atoi(strings.TrimPrefix(e.Name(), ShiftDirPrefix))
		if err == nil && r >= 1 {
			starts = append(starts, r)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(starts)))
	return starts
}

// RoundDirAmong is RoundDir with dir's ShiftRounds given.
func RoundDirAmong(dir, site string, round int, shiftRounds []int) string {
	for _, r := range shiftRounds {
		if r > round {
			continue
		}
		sub := ShiftDir(dir, r)
		if _, err := SiteFile(sub, site, TrainSplit); err == nil {
			return sub
		}
	}
	return dir
}

// LoadSiteRound is LoadSite on RoundDir(dir, site, round): the site's data
// as it is in that round.
func LoadSiteRound(dir, site string, round int, opt SiteOptions) (*SiteData, error) {
	return LoadSite(RoundDir(dir, site, round), site, opt)
}
