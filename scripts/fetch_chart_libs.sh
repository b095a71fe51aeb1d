#!/usr/bin/env bash
# Fetch the chart libraries the browser tests use from the npm registry (never committed):
#   scripts/fetch_chart_libs.sh DIR        (the tests read TVIR_CHART_LIBS, default target/chart-libs)
# Each package is `npm pack`ed at a pinned version and unpacked to DIR/<name>-<version>/;
# DIR/manifest.tsv maps each public CDN URL our test pages load to the file standing in
# for it (path relative to DIR). Re-running with the same versions does nothing.
set -euo pipefail
dir=${1:?usage: scripts/fetch_chart_libs.sh DIR}
command -v npm >/dev/null || { echo "fetch_chart_libs: npm is needed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dir/tgz"
dir=$(cd "$dir" && pwd)

# name version  (pinned; bump together with the manifest below)
packages=(
  "chart.js 4.6.1"
  "echarts 5.6.0"
  "plotly.js-dist-min 2.35.3"
  "d3 7.9.2"
  "vega 6.4.0"
  "vega-lite 6.4.3"
  "vega-embed 7.3.0"
  "highcharts 13.1.1"
  "apexcharts 7.9.1"
  # versions and plugins that AI-written reports pin in their <script> tags (the real-page
  # runs of scripts/chart_pages_report.sh; a page that loads one version gets that version)
  "chart.js 4.4.0"
  "chart.js 4.4.1"
  "chart.js 4.4.4"
  "chart.js 4.4.7"
  "chart.js 3.9.1"
  "chartjs-plugin-annotation 3.1.0"
  "chartjs-plugin-datalabels 2.0.0"
  "chartjs-plugin-zoom 2.0.1"
  "hammerjs 2.0.8"
  "plotly.js-dist-min 2.27.0"
  "plotly.js-dist-min 1.58.5"
  "vega 5.33.1"
  "vega-lite 5.23.0"
  "vega-embed 6.29.0"
  "topojson 3.0.2"
  # not a chart library: pages bind their click handlers through it
  "jquery 3.7.1"
)
for p in "${packages[@]}"; do
  set -- $p
  name=$1 version=$2 out="$dir/$1-$2"
  [ -d "$out/package" ] && continue
  tgz=$(cd "$dir/tgz" && npm pack --silent "$name@$version" | tail -n1)
  mkdir -p "$out"
  tar -xzf "$dir/tgz/$tgz" -C "$out"
done

# public URL <TAB> file under DIR
cat > "$dir/manifest.tsv.tmp" <<TSV
https://cdn.jsdelivr.net/npm/chart.js@4/dist/chart.umd.min.js	chart.js-4.6.1/package/dist/chart.umd.min.js
https://cdn.jsdelivr.net/npm/chart.js@4.6.1/dist/chart.umd.min.js	chart.js-4.6.1/package/dist/chart.umd.min.js
https://cdn.jsdelivr.net/npm/chart.js	chart.js-4.6.1/package/dist/chart.umd.min.js
https://cdn.jsdelivr.net/npm/echarts@5/dist/echarts.min.js	echarts-5.6.0/package/dist/echarts.min.js
https://cdn.jsdelivr.net/npm/echarts@5.6.0/dist/echarts.min.js	echarts-5.6.0/package/dist/echarts.min.js
https://cdn.plot.ly/plotly-2.35.2.min.js	plotly.js-dist-min-2.35.3/package/plotly.min.js
https://cdn.plot.ly/plotly-2.35.3.min.js	plotly.js-dist-min-2.35.3/package/plotly.min.js
https://d3js.org/d3.v7.min.js	d3-7.9.2/package/dist/d3.min.js
https://cdn.jsdelivr.net/npm/d3@7	d3-7.9.2/package/dist/d3.min.js
https://cdn.jsdelivr.net/npm/vega@6	vega-6.4.0/package/build/vega.min.js
https://cdn.jsdelivr.net/npm/vega-lite@6	vega-lite-6.4.3/package/build/vega-lite.min.js
https://cdn.jsdelivr.net/npm/vega-embed@7	vega-embed-7.3.0/package/build/vega-embed.min.js
https://code.highcharts.com/highcharts.js	highcharts-13.1.1/package/highcharts.js
https://code.highcharts.com/modules/exporting.js	highcharts-13.1.1/package/modules/exporting.js
https://code.highcharts.com/modules/export-data.js	highcharts-13.1.1/package/modules/export-data.js
https://code.highcharts.com/modules/accessibility.js	highcharts-13.1.1/package/modules/accessibility.js
https://cdn.jsdelivr.net/npm/apexcharts	apexcharts-7.9.1/package/dist/apexcharts.min.js
https://cdn.jsdelivr.net/npm/apexcharts@7.9.1/dist/apexcharts.min.js	apexcharts-7.9.1/package/dist/apexcharts.min.js
https://cdn.jsdelivr.net/npm/chart.js@4	chart.js-4.6.1/package/dist/chart.umd.min.js
https://cdn.jsdelivr.net/npm/chart.js@4.4.0/dist/chart.umd.min.js	chart.js-4.4.0/package/dist/chart.umd.js
https://cdn.jsdelivr.net/npm/chart.js@4.4.4/dist/chart.umd.min.js	chart.js-4.4.4/package/dist/chart.umd.js
https://cdn.jsdelivr.net/npm/chart.js@4.4.7/dist/chart.umd.min.js	chart.js-4.4.7/package/dist/chart.umd.js
https://cdnjs.cloudflare.com/ajax/libs/Chart.js/4.4.1/chart.umd.min.js	chart.js-4.4.1/package/dist/chart.umd.js
https://cdn.jsdelivr.net/npm/chart.js@3.9.1/dist/chart.min.js	chart.js-3.9.1/package/dist/chart.min.js
https://cdn.jsdelivr.net/npm/chartjs-plugin-annotation	chartjs-plugin-annotation-3.1.0/package/dist/chartjs-plugin-annotation.min.js
https://cdn.jsdelivr.net/npm/chartjs-plugin-datalabels@2.0.0	chartjs-plugin-datalabels-2.0.0/package/dist/chartjs-plugin-datalabels.min.js
https://cdn.jsdelivr.net/npm/chartjs-plugin-zoom@2.0.1/dist/chartjs-plugin-zoom.min.js	chartjs-plugin-zoom-2.0.1/package/dist/chartjs-plugin-zoom.min.js
https://cdn.jsdelivr.net/npm/hammerjs@2.0.8	hammerjs-2.0.8/package/hammer.min.js
https://cdn.plot.ly/plotly-2.27.0.min.js	plotly.js-dist-min-2.27.0/package/plotly.min.js
https://cdn.plot.ly/plotly-latest.min.js	plotly.js-dist-min-1.58.5/package/plotly.min.js
https://cdn.jsdelivr.net/npm/vega@5	vega-5.33.1/package/build/vega.min.js
https://cdn.jsdelivr.net/npm/vega-lite@5	vega-lite-5.23.0/package/build/vega-lite.min.js
https://cdn.jsdelivr.net/npm/vega-embed@6	vega-embed-6.29.0/package/build/vega-embed.min.js
https://cdnjs.cloudflare.com/ajax/libs/topojson/3.0.2/topojson.min.js	topojson-3.0.2/package/dist/topojson.min.js
https://code.jquery.com/jquery-3.7.1.min.js	jquery-3.7.1/package/dist/jquery.min.js
https://cdn.jsdelivr.net/npm/jquery@3.7.1/dist/jquery.min.js	jquery-3.7.1/package/dist/jquery.min.js
https://cdnjs.cloudflare.com/ajax/libs/jquery/3.7.1/jquery.min.js	jquery-3.7.1/package/dist/jquery.min.js
TSV
while IFS=$'\t' read -r url file; do
  [ -f "$dir/$file" ] || { echo "fetch_chart_libs: $file missing after unpacking (for $url)" >&2; exit 1; }
done < "$dir/manifest.tsv.tmp"
mv "$dir/manifest.tsv.tmp" "$dir/manifest.tsv"
echo "chart libraries in $dir ($(wc -l < "$dir/manifest.tsv") URLs in manifest.tsv)"
