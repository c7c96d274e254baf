// Evaluation metrics: accuracy counts and ROC-AUC with ties given average ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// What evaluation reports: accuracy for multi-class data, ROC-AUC of the class-1 score
/// for two classes (`automatic` picks by the model's output width).
enum class Metric { automatic, accuracy, roc_auc };

inline const char* to_string(Metric m) noexcept {
  switch (m) {
    case Metric::automatic:
      return "auto";
    case Metric::accuracy:
      return "accuracy";
    case Metric::roc_auc:
      return "roc_auc";
  }
  return "?";
}

/// Area under the ROC curve of `scores` for binary `labels` (0 or 1): the probability that
/// a random positive scores above a random negative, ties counting one half (the
/// Mann-Whitney statistic with average ranks; equals scikit-learn's roc_auc_score).
/// O(n log n). Throws ShapeError for lengths that differ, InvalidArgument for a label
/// other than 0/1 or when one class is absent (the AUC is undefined then).
inline double roc_auc(std::span<const double> scores, std::span<const std::int64_t> labels) {
  if (scores.size() != labels.size())
    throw ShapeError("roc_auc", std::to_string(scores.size()) + " scores, " +
                                    std::to_string(labels.size()) + " labels; expected equal");
  std::int64_t pos = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != 0 && labels[i] != 1)
      throw InvalidArgument("roc_auc: label " + std::to_string(labels[i]) + " at " +
                            std::to_string(i) + "; expected 0 or 1");
    pos += labels[i];
  }
  const auto n = static_cast<std::int64_t>(labels.size());
  const std::int64_t neg = n - pos;
  if (pos == 0 || neg == 0)
    throw InvalidArgument("roc_auc: " + std::to_string(pos) + " positives and " +
                          std::to_string(neg) + " negatives; expected at least one of each");
  std::vector<std::size_t> order(labels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based), each run of equal scores sharing its mean rank.
  long double rank_sum = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    std::int64_t run_pos = 0;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) run_pos += labels[order[j++]];
    rank_sum += static_cast<long double>(run_pos) * (static_cast<long double>(i + j + 1) / 2);
    i = j;
  }
  const long double u = rank_sum - static_cast<long double>(pos) * (pos + 1) / 2;
  return static_cast<double>(u / (static_cast<long double>(pos) * neg));
}

}  // namespace distgraph
