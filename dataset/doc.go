// Package dataset is the site data on disk: it reads the numeric CSV and
// parquet matrices that sites hold, and it discovers and writes federation
// directories.
//
// A site file holds one sample per row, one feature per column, an optional
// header line and a label column (named "y" by default) that is split off
// from the features (LoadSite, ReadCSV). Every problem a user can cause (a
// missing or empty file, ragged rows, a cell that is not a number, NaN or
// Inf) is reported as a *ParseError or *SiteDataError that names the file,
// line and column, so that a command can print it as is.
//
// A federation directory holds every site's "<site>_train" and
// "<site>_test" file, "from-round-NNNN/" sub-directories with the data that
// replace a site's files from round NNNN on (a continual scenario), and
// federation.json. DiscoverFederation finds its sites in a stable order
// and hashes their files; WriteFederation writes a generated federation
// (package eval's generators return data only) in that layout.
//
// It computes no topology: package tda takes the matrices it returns (it
// uses only tda's float format, to write files byte for byte as the
// authors' Python did).
package dataset
