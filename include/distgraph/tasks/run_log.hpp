// RunLog: what a training run writes into its output folder — metrics.csv, curves.svg and
// result.json — each published atomically (written under a temporary name, then renamed).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// One epoch's figures (seconds and metrics as fractions in [0, 1]).
struct EpochRow {
  std::int64_t epoch = 0;
  /// val_metric and val_loss are NaN for an epoch not followed by validation (eval_every).
  double loss = 0, train_metric = 0, val_metric = 0;
  double epoch_s = 0, sample_s = 0, fetch_s = 0, compute_s = 0, allreduce_s = 0;
  /// Rows and bytes the epoch's training batches pulled from other machines' servers,
  /// summed over the trainers (KVClient::remote_traffic; 0 for in-process graphs).
  std::int64_t remote_rows = 0, remote_bytes = 0;
  /// Of the rows the epoch's training batches wanted from other machines, the fraction the
  /// machines' row caches served (0 without a cache).
  double cache_hit_rate = 0;
  /// Mean cross-entropy of the validation nodes after the epoch (0 without a validation set).
  double val_loss = 0;
  /// Putting the training batches on the model's device: features, labels and blocks to
  /// tensors and, on a GPU, the host-to-device copies (not part of compute_s).
  double copy_s = 0;
  /// CPU seconds the reporting trainer's process used in the epoch (EpochStats::cpu_s; 0
  /// in rows read back from a metrics.csv written before it).
  double cpu_s = 0;
};

/// The header of metrics.csv (users' scripts parse it: never rename a column; new ones
/// go at the end).
inline constexpr const char* metrics_csv_header =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
    "remote_rows,remote_bytes,cache_hit_rate,val_loss,copy_s,cpu_s";
/// The header before cpu_s: such files still resume.
inline constexpr const char* metrics_csv_header_v5 =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
    "remote_rows,remote_bytes,cache_hit_rate,val_loss,copy_s";
/// The header before copy_s: such files still resume.
inline constexpr const char* metrics_csv_header_v4 =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
    "remote_rows,remote_bytes,cache_hit_rate,val_loss";
/// The header before remote_rows and remote_bytes: such files still resume.
inline constexpr const char* metrics_csv_header_v1 =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s";
/// The header before val_loss: such files still resume.
inline constexpr const char* metrics_csv_header_v3 =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
    "remote_rows,remote_bytes,cache_hit_rate";
/// The header before cache_hit_rate: such files still resume.
inline constexpr const char* metrics_csv_header_v2 =
    "epoch,loss,train_metric,val_metric,epoch_s,sample_s,fetch_s,compute_s,allreduce_s,"
    "remote_rows,remote_bytes";

/// metrics.csv text: the header and one row per epoch.
inline std::string metrics_csv(const std::vector<EpochRow>& rows) {
  std::ostringstream s;
  s << metrics_csv_header << "\n";
  char line[512];
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line,
                  "%lld,%.6f,%.6f,%.6f,%.4f,%.4f,%.4f,%.4f,%.4f,%lld,%lld,%.6f,%.6f,%.4f,%.4f\n",
                  static_cast<long long>(r.epoch), r.loss, r.train_metric, r.val_metric, r.epoch_s,
                  r.sample_s, r.fetch_s, r.compute_s, r.allreduce_s,
                  static_cast<long long>(r.remote_rows), static_cast<long long>(r.remote_bytes),
                  r.cache_hit_rate, r.val_loss, r.copy_s, r.cpu_s);
    s << line;
  }
  return s.str();
}

/// Reads metrics.csv back (for --resume). Throws FormatError naming the file and line.
inline std::vector<EpochRow> read_metrics_csv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot read");
  std::string line;
  const char* const headers[] = {metrics_csv_header_v1, metrics_csv_header_v2,
                                 metrics_csv_header_v3, metrics_csv_header_v4,
                                 metrics_csv_header_v5, metrics_csv_header};
  const int widths[] = {9, 11, 12, 13, 14, 15};
  static_assert(std::size(headers) == std::size(widths));
  int columns = 0;
  if (std::getline(in, line))
    for (std::size_t i = 0; i < std::size(headers); ++i)
      if (line == headers[i]) columns = widths[i];
  if (columns == 0) throw FormatError(path.string(), "first line is not the metrics header");
  std::vector<EpochRow> rows;
  int no = 1;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty()) continue;
    EpochRow r;
    long long e = 0, remote_rows = 0, remote_bytes = 0;
    if (std::sscanf(line.c_str(), "%lld,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lld,%lld,%lf,%lf,%lf,%lf",
                    &e, &r.loss, &r.train_metric, &r.val_metric, &r.epoch_s, &r.sample_s,
                    &r.fetch_s, &r.compute_s, &r.allreduce_s, &remote_rows, &remote_bytes,
                    &r.cache_hit_rate, &r.val_loss, &r.copy_s, &r.cpu_s) != columns)
      throw FormatError(path.string() + ":" + std::to_string(no),
                        "expected " + std::to_string(columns) + " numbers");
    r.epoch = e;
    r.remote_rows = remote_rows;
    r.remote_bytes = remote_bytes;
    rows.push_back(r);
  }
  return rows;
}

/// An SVG with two panels — training loss, and train/validation metric — per epoch,
/// drawn with plain SVG elements (no dependencies).
inline std::string curves_svg(const std::vector<EpochRow>& rows, const std::string& metric) {
  constexpr double W = 900, H = 360, pad = 50, gap = 60;
  const double pw = (W - 2 * pad - gap) / 2, ph = H - 2 * pad;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
       "fill=\"white\"/>\n";
  const double e0 = rows.empty() ? 0 : static_cast<double>(rows.front().epoch);
  const double e1 = rows.empty() ? 1 : std::max(e0 + 1, static_cast<double>(rows.back().epoch));
  auto panel = [&](double x0, const std::string& title,
                   std::vector<std::pair<std::string, std::vector<double>>> series, double lo,
                   double hi) {
    if (!(hi > lo)) hi = lo + 1;
    auto X = [&](double e) { return x0 + (e - e0) / (e1 - e0) * pw; };
    auto Y = [&](double v) { return pad + ph - (v - lo) / (hi - lo) * ph; };
    s << "<text x=\"" << x0 + pw / 2 << "\" y=\"" << pad - 20 << "\" text-anchor=\"middle\">"
      << title << "</text>\n";
    s << "<rect x=\"" << x0 << "\" y=\"" << pad << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
    for (int k = 0; k <= 4; ++k) {
      const double v = lo + (hi - lo) * k / 4;
      char label[32];
      std::snprintf(label, sizeof label, "%.3g", v);
      s << "<line x1=\"" << x0 << "\" x2=\"" << x0 + pw << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
        << "\" stroke=\"#ddd\"/><text x=\"" << x0 - 5 << "\" y=\"" << Y(v) + 4
        << "\" text-anchor=\"end\">" << label << "</text>\n";
    }
    s << "<text x=\"" << x0 + pw / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">epoch ("
      << e0 << " to " << e1 << ")</text>\n";
    const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c"};
    int c = 0;
    for (const auto& [name, values] : series) {
      s << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << colours[c % 3]
        << "\" points=\"";
      for (std::size_t i = 0; i < values.size() && i < rows.size(); ++i)
        if (std::isfinite(values[i]))  // epochs without validation (--eval-every) have none
          s << X(static_cast<double>(rows[i].epoch)) << "," << Y(values[i]) << " ";
      s << "\"/>\n<text x=\"" << x0 + pw - 5 << "\" y=\"" << pad + 16 + 14 * c
        << "\" text-anchor=\"end\" fill=\"" << colours[c % 3] << "\">" << name << "</text>\n";
      ++c;
    }
  };
  std::vector<double> loss, tr, va;
  for (const auto& r : rows) {
    loss.push_back(r.loss);
    tr.push_back(r.train_metric);
    va.push_back(r.val_metric);
  }
  const double lmax = loss.empty() ? 1 : *std::max_element(loss.begin(), loss.end());
  panel(pad, "training loss", {{"loss", loss}}, 0, lmax * 1.05);
  panel(pad + pw + gap, metric, {{"train", tr}, {"validation", va}}, 0, 1);
  s << "</svg>\n";
  return s.str();
}

/// Writes metrics.csv and curves.svg into `dir`.
inline void write_run_log(const std::filesystem::path& dir, const std::vector<EpochRow>& rows,
                          const std::string& metric) {
  write_file_durably(dir / "metrics.csv", metrics_csv(rows));
  write_file_durably(dir / "curves.svg", curves_svg(rows, metric));
}

/// Writes result.json into `dir`.
inline void write_result(const std::filesystem::path& dir, const nlohmann::json& result) {
  write_file_durably(dir / "result.json", result.dump(2) + "\n");
}

}  // namespace distgraph
