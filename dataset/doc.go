// Package dataset reads the numeric CSV matrices that sites hold: one sample
// per row, one feature per column, an optional header line and an optional
// label column (named "y" by default) that is split off from the features.
//
// Every problem a user can cause (a missing or empty file, ragged rows, a
// cell that is not a number, NaN or Inf) is reported as a *ParseError that
// names the file, line and column, so that a command can print it as is.
//
// It knows nothing of topology: package tda takes the matrix it returns,
// and neither package imports the other.
package dataset
