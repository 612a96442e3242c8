"""The conformance corpus: short driver programs that call real libraries (installed from the
package index, never copied), their catalogue, and the matrix that runs every xlatools step on them."""
