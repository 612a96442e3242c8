"""Compare bundles (run, module and pass level) and render the self-contained HTML report.

Entry points for other capabilities: `xlatools.compare.diff.diff_bundles(a, b) -> BundleDiff`
and `xlatools.compare.report.write_report([bundle, ...], out_html)`.
"""
