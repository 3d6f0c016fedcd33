# A tiny Sphinx doc set for bench R (rebuild from the manifest): the default
# theme (alabaster) as Sphinx ships it.
project = "Page Import"
author = "bench R"
html_theme = "alabaster"
extensions = []
