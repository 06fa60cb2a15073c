# Sourced by hack/bench.d/*.sh: print a benchmark section's command and
# its result lines as Markdown.
#   gobench TITLE COMMAND [vertical]
# "vertical" puts each reported metric on its own line (wide rows).
gobench() {
  local title=$1 cmd=$2 layout=${3:-}
  echo "## $title"
  echo
  echo "\`$cmd\`"
  echo
  echo '```'
  if [ "$layout" = vertical ]; then
    eval "$cmd" 2>/dev/null | grep -E '^(Benchmark|cpu:)' | tr '\t' '\n' | sed -e 's/^ *//' -e '/^$/d'
  else
    eval "$cmd" 2>/dev/null | grep -E '^(Benchmark|cpu:)'
  fi
  echo '```'
}
