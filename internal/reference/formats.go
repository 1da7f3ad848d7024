package reference

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// Formats returns docs/reference/formats.md: the campaign and sweep file
// formats, the round manifest, the parquet layouts and the errors a site
// or campaign can end with, read from the declarations themselves (the
// source of the packages campaign, search and pipeline under root, their
// doc comments included, and store.Layouts). root is the repository's
// root directory.
func Formats(root string) (string, error) {
	pkgs := map[string]*source{}
	for _, dir := range []string{"campaign", "search", "pipeline"} {
		src, err := parseDir(filepath.Join(root, dir))
		if err != nil {
			return "", err
		}
		pkgs[dir] = src
	}
	var b strings.Builder
	b.WriteString("<!-- Generated from the declarations in campaign/, search/, pipeline/, store/ and artifact/ by `make reference`; do not edit. -->\n\n")
	b.WriteString("# File formats, the manifest, parquet layouts and errors\n\n")
	b.WriteString("Each section is generated from the Go declaration named in its heading: its doc comment and,\n")
	b.WriteString("per key, the field's type and comment. `make test` fails when this page is stale.\n\n")

	b.WriteString("## Campaign file (`starter run FILE.yaml`)\n\n")
	if err := pkgs["campaign"].structs(&b, "yaml", "File"); err != nil {
		return "", err
	}
	b.WriteString("\n## Sweep file (`starter sweep FILE.yaml`)\n\n")
	if err := pkgs["campaign"].structs(&b, "yaml", "SweepFile"); err != nil {
		return "", err
	}
	b.WriteString("\nThe search space and the strategies' options (package `search`):\n\n")
	if err := pkgs["search"].structs(&b, "yaml", "Dimension", "ASHAOptions", "TPEOptions", "MedianOptions"); err != nil {
		return "", err
	}
	b.WriteString("\n## Round manifest (`campaigns/<campaign>/round-NNNN/manifest.json`)\n\n")
	if err := pkgs["pipeline"].structs(&b, "json", "RoundManifest"); err != nil {
		return "", err
	}
	b.WriteString("\n## Parquet layouts\n\n")
	for _, l := range store.Layouts() {
		fmt.Fprintf(&b, "### %s\n\nObjects: %s. A row is %s.\n\n| column | type | nullable |\n|---|---|---|\n", l.Name, l.Objects, l.Row)
		for _, f := range l.Schema.Fields() {
			fmt.Fprintf(&b, "| `%s` | %s | %t |\n", f.Name, f.Type, f.Nullable)
		}
		b.WriteString("\n")
	}
	objectKeys(&b)
	b.WriteString("## How a site or a campaign can end\n\n")
	for _, g := range []struct {
		title, prefix string
		advice        func(value string) string
	}{
		{"Round outcomes (a manifest's `outcome`)", "Outcome", nil},
		{"Why a site left a round (a manifest's `dropped[].reason`)", "Drop", nil},
		{"Error types a campaign or site activity fails with (Temporal's application error type; `starter` prints the advice after the failure)", "ErrType", pipeline.Advice},
	} {
		fmt.Fprintf(&b, "### %s\n\n", g.title)
		if err := pkgs["pipeline"].consts(&b, g.prefix, g.advice); err != nil {
			return "", err
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// objectKeys writes the table of a campaign's object keys (package
// artifact builds every one) and, from the read policy itself
// (artifact.SiteMayRead), whether a site's identity may read each.
func objectKeys(b *strings.Builder) {
	const c, r, site, other = "c", 7, "site0", "site1"
	k := artifact.RoundKeys{Campaign: c, Round: r, Attempt: 1}
	b.WriteString("## Object keys and who reads them\n\n")
	b.WriteString("Every key of a campaign, for campaign `c`, round 7, site `site0` and another site `site1`\n")
	b.WriteString("(package `artifact`; a restarted campaign's attempt n ≥ 2 writes the round's keys under\n")
	b.WriteString("`round-0007/attempt-n/`). The last column is the read policy itself (`artifact.SiteMayRead`):\n")
	b.WriteString("what `site0`'s S3 identity may read. Of what the server writes, a site reads the global model,\n")
	b.WriteString("what is written under its own name, and the shared state; the server and the starter read\n")
	b.WriteString("everything. Members of one pTopoFL cluster get byte-identical copies of its model, so their\n")
	b.WriteString("`site_model` records in a manifest share one sha256.\n\n")
	b.WriteString("| key | what | written by | `site0` reads |\n|---|---|---|---|\n")
	for _, row := range []struct{ key, what, writer string }{
		{artifact.SpecKey(c), "the campaign spec", "starter"},
		{artifact.InitialModelKey(c), "the initial model of a campaign of model \"external\"", "starter or server"},
		{artifact.ModelLayoutKey(c), "its tensor layout", "starter or server"},
		{k.Descriptor(site), "site0's descriptor", "site0"},
		{k.Descriptor(other), "another site's descriptor", "site1"},
		{k.Model(site), "site0's local model", "site0"},
		{k.Model(other), "another site's local model", "site1"},
		{k.SiteState(site), "site0's method state (pFedMe's personal model, SCAFFOLD's c_i)", "site0"},
		{k.Control(site), "site0's SCAFFOLD control-variate update", "site0"},
		{k.Init(site), "the initial model site0's program made (model \"external\", round 1)", "site0"},
		{k.Aggregate(artifact.GlobalTarget), "the global model (every method but pTopoFL and local training)", "server"},
		{k.Aggregate(site), "the model site0 starts its next round from: its cluster's blend (pTopoFL), its own (local)", "server"},
		{k.Aggregate(other), "the model another site starts from", "server"},
		{k.Aggregate(artifact.ClusterTargetPrefix + "0"), "cluster 0's blended model, in campaigns written before per-site aggregates", "server (old)"},
		{k.SharedState(), "the server state every site reads: SCAFFOLD's control variate c", "server"},
		{k.ServerState(), "the server's own state: global model, c, FoolsGold's per-site histories", "server"},
		{k.Clustering(), "pTopoFL's clustering, trust, drift and reference descriptors, per site", "server"},
		{k.SecAggPublic("global"), "secure aggregation: the group's members, configuration and advertised public keys", "server"},
		{k.SecAggView("global", site), "site0's view of its group: its neighbours, their indices and public keys", "server"},
		{k.SecAggView("global", other), "another site's view of its group", "server"},
		{k.SecAggShares("global", site), "the shares site0 encrypted to each of its neighbours", "site0"},
		{k.SecAggInbox("global", site), "the encrypted shares site0's neighbours sent it", "server"},
		{k.SecAggInbox("global", other), "the encrypted shares another site's neighbours sent it", "server"},
		{k.SecAggMasked("global", site), "site0's masked input", "site0"},
		{k.SecAggMasked("global", other), "another site's masked input", "site1"},
		{k.SecAggReveal("global", site), "the shares site0 revealed for unmasking", "site0"},
		{k.SecAggSum("global"), "the group's unmasked sum of weighted updates", "server"},
		{k.Manifest(), "the round's manifest", "server"},
		{artifact.PausedStateKey(c, r), "the state of a campaign paused at an adaptive sweep's rung", "server"},
	} {
		reads := "no"
		if artifact.SiteMayRead(site, row.key) {
			reads = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", row.key, row.what, row.writer, reads)
	}
	b.WriteString("\n")
}

// source is one package's declarations, from its non-test files.
type source struct {
	dir       string
	types     map[string]*ast.TypeSpec
	docs      map[string]string
	constants []constDecl
}

type constDecl struct {
	name, value, doc string
}

func parseDir(dir string) (*source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	src := &source{dir: dir, types: map[string]*ast.TypeSpec{}, docs: map[string]string{}}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					src.types[s.Name.Name] = s
					doc := s.Doc
					if doc == nil {
						doc = g.Doc
					}
					src.docs[s.Name.Name] = doc.Text()
				case *ast.ValueSpec:
					if g.Tok != token.CONST || len(s.Values) != len(s.Names) {
						continue
					}
					doc := strings.TrimSpace(s.Doc.Text() + " " + s.Comment.Text())
					for i, n := range s.Names {
						src.constants = append(src.constants, constDecl{n.Name, types.ExprString(s.Values[i]), oneLine(doc)})
					}
				}
			}
		}
	}
	return src, nil
}

// structs writes each named struct and, after them, the struct types of the
// same package their fields use, each once: its doc comment as Markdown
// and a table of its keys (the tag's name for tag).
func (s *source) structs(b *strings.Builder, tag string, names ...string) error {
	queue := append([]string(nil), names...)
	done := map[string]bool{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if done[name] {
			continue
		}
		done[name] = true
		ts, ok := s.types[name]
		if !ok {
			return fmt.Errorf("reference: no type %s in %s", name, s.dir)
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return fmt.Errorf("reference: %s in %s is not a struct", name, s.dir)
		}
		fmt.Fprintf(b, "#### `%s.%s`\n\n", filepath.Base(s.dir), name)
		if d := markdown(s.docs[name]); d != "" {
			b.WriteString(d + "\n")
		}
		b.WriteString("| key | type | meaning |\n|---|---|---|\n")
		for _, f := range st.Fields.List {
			if len(f.Names) == 0 || !f.Names[0].IsExported() {
				continue
			}
			key := f.Names[0].Name
			if f.Tag != nil {
				t := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get(tag)
				if t == "-" {
					continue
				}
				if k, _, _ := strings.Cut(t, ","); k != "" {
					key = k
				}
			}
			typ := types.ExprString(f.Type)
			doc := oneLine(strings.TrimSpace(f.Doc.Text() + " " + f.Comment.Text()))
			fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", key, typ, strings.ReplaceAll(doc, "|", `\|`))
			for _, used := range typeNames(f.Type) {
				if t, ok := s.types[used]; ok && !done[used] {
					if _, isStruct := t.Type.(*ast.StructType); isStruct {
						queue = append(queue, used)
					}
				}
			}
		}
		b.WriteString("\n")
	}
	return nil
}

// consts writes a table of the package's constants whose names start
// with prefix, sorted by name, with their values and comments, and what
// advice (when not nil) says of each value.
func (s *source) consts(b *strings.Builder, prefix string, advice func(string) string) error {
	var rows []constDecl
	for _, c := range s.constants {
		if strings.HasPrefix(c.name, prefix) {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("reference: no constants %s* in %s", prefix, s.dir)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	b.WriteString("| value | constant | meaning and what to do |\n|---|---|---|\n")
	for _, c := range rows {
		value := strings.Trim(c.value, `"`)
		doc := strings.TrimPrefix(c.doc, c.name+": ")
		if advice != nil {
			doc += " What to do: " + advice(value) + "."
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", value, c.name, strings.ReplaceAll(doc, "|", `\|`))
	}
	return nil
}

// typeNames lists the identifiers naming types in a field's type
// expression (T, *T, []T, map[K]T).
func typeNames(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			out = append(out, id.Name)
		}
		if _, ok := n.(*ast.SelectorExpr); ok {
			return false // another package's type
		}
		return true
	})
	return out
}

// markdown renders a Go doc comment as Markdown.
func markdown(text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	var p comment.Parser
	var pr comment.Printer
	pr.HeadingLevel = 5
	return string(pr.Markdown(p.Parse(text)))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
