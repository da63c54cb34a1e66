package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A job's trajectory groups turned into packed rows: group advantages, zero-advantage trajectories
 * dropped (but counted), histories tokenized, rows packed, advantages balanced and normalised over
 * the whole batch. Also the group metrics every gradient step reports.
 *
 * @param rows one optimizer step each; empty when nothing is trainable
 * @param metrics reward, reward_std_dev, num_groups_submitted, num_groups_trainable,
 *     num_trajectories, num_trainable_tokens
 */
public record TrainingBatch(List<PackedRow> rows, Map<String, Double> metrics) {
  public TrainingBatch {
    rows = List.copyOf(rows);
    metrics = Map.copyOf(metrics);
  }

  /**
   * Builds the batch.
   *
   * @param groups {@code TrajectoryGroup} JSON objects ({@code {trajectories: [...]}})
   */
  public static TrainingBatch build(
      List<JsonNode> groups,
      TrajectoryTokenizer tokenizer,
      boolean scaleRewards,
      double advantageBalance,
      int maxLength) {
    List<Packer.Item> items = new ArrayList<>();
    double rewardSum = 0;
    int trajectories = 0;
    double stdSum = 0;
    int stdGroups = 0;
    int trainableGroups = 0;
    int trajectoryIndex = 0;
    int historyId = 0;
    for (JsonNode group : groups) {
      JsonNode ts = group.path("trajectories");
      int n = ts.size();
      double[] rewards = new double[n];
      Set<Double> distinct = new HashSet<>();
      for (int i = 0; i < n; i++) {
        rewards[i] = ts.get(i).path("reward").asDouble();
        rewardSum += rewards[i];
        distinct.add(rewards[i]);
      }
      trajectories += n;
      if (n > 1) {
        stdSum += Advantages.populationStd(rewards);
        stdGroups++;
      }
      if (distinct.size() > 1) trainableGroups++;
      double[] adv = Advantages.group(rewards, scaleRewards);
      for (int i = 0; i < n; i++, trajectoryIndex++) {
        if (adv[i] == 0) continue; // dropped, but counted in the metrics above
        for (TokenizedHistory h : tokenizer.tokenize(ts.get(i)))
          items.add(new Packer.Item(h, trajectoryIndex, historyId++, adv[i]));
      }
    }
    List<PackedRow> rows = items.isEmpty() ? List.of() : Packer.pack(items, maxLength);
    Advantages.normalize(rows, advantageBalance);
    long trainableTokens = 0;
    for (PackedRow row : rows) trainableTokens += row.numTrainable();
    Map<String, Double> metrics = new LinkedHashMap<>();
    metrics.put("reward", trajectories == 0 ? 0.0 : rewardSum / trajectories);
    metrics.put("reward_std_dev", stdGroups == 0 ? 0.0 : stdSum / stdGroups);
    metrics.put("num_groups_submitted", (double) groups.size());
    metrics.put("num_groups_trainable", (double) trainableGroups);
    metrics.put("num_trajectories", (double) trajectories);
    metrics.put("num_trainable_tokens", (double) trainableTokens);
    return new TrainingBatch(rows, metrics);
  }
}
