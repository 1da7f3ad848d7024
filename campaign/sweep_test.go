package campaign

import (
	"strings"
	"testing"
)

func TestGridSettings(t *testing.T) {
	s, err := GridSettings(map[string][]any{"beta": {0, 0.3}, "clusters": {1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, x := range s {
		labels = append(labels, x.Label)
	}
	if got := strings.Join(labels, " "); got != "beta0_clusters1 beta0_clusters2 beta0.3_clusters1 beta0.3_clusters2" {
		t.Errorf("labels %s", got)
	}
}
