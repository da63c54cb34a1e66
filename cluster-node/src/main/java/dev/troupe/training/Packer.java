package dev.troupe.training;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Packs tokenized histories into rows of at most {@code maxLength} tokens, greedily in order (ART
 * {@code preprocessing/pack.py}): a history that does not fit starts a new row; a history longer
 * than a row is truncated. Unlike ART, rows are not padded to a multiple of 2048 (no fixed shapes
 * on the CPU) and group prompts are not shared between histories (each history is its own segment).
 */
public final class Packer {
  private Packer() {}

  /**
   * A history to pack and what its targets inherit.
   *
   * @param trajectory job-wide trajectory index (weights are per trajectory)
   * @param historyId job-wide history index (sequence-level ratios are per history)
   */
  public record Item(TokenizedHistory history, int trajectory, int historyId, double advantage) {}

  /**
   * Rows with per-target arrays filled in: mask, old logprobs, advantages, weights {@code 1 /
   * (trainable targets of the trajectory + 1e-6)} and history ids.
   */
  public static List<PackedRow> pack(List<Item> items, int maxLength) {
    if (maxLength < 2) throw new IllegalArgumentException("maxLength must be >= 2");
    List<List<Item>> rows = new ArrayList<>();
    List<Item> current = new ArrayList<>();
    int used = 0;
    for (Item item : items) {
      int len = Math.min(item.history().length(), maxLength);
      if (used + len > maxLength && !current.isEmpty()) {
        rows.add(current);
        current = new ArrayList<>();
        used = 0;
      }
      current.add(item);
      used += len;
    }
    if (!current.isEmpty()) rows.add(current);

    List<PackedRow> out = new ArrayList<>();
    int maxTrajectory = -1;
    for (Item item : items) maxTrajectory = Math.max(maxTrajectory, item.trajectory());
    long[] trainablePerTrajectory = new long[maxTrajectory + 1];
    for (List<Item> row : rows) {
      int n = 0;
      for (Item item : row) n += Math.min(item.history().length(), maxLength);
      int[] tokens = new int[n];
      int[] positions = new int[n];
      int[] segments = new int[n];
      boolean[] mask = new boolean[n];
      double[] old = new double[n];
      double[] adv = new double[n];
      double[] weights = new double[n];
      int[] historyIds = new int[n];
      Arrays.fill(old, Double.NaN);
      int offset = 0;
      for (int s = 0; s < row.size(); s++) {
        Item item = row.get(s);
        TokenizedHistory h = item.history();
        int len = Math.min(h.length(), maxLength);
        for (int i = 0; i < len; i++) {
          int t = offset + i;
          tokens[t] = h.tokens()[i];
          positions[t] = i;
          segments[t] = s;
          historyIds[t] = item.historyId();
          adv[t] = item.advantage();
          // target t is token i + 1 of the same history
          if (i + 1 < len && h.trainable()[i + 1]) {
            mask[t] = true;
            old[t] = h.logprobs()[i + 1];
            trainablePerTrajectory[item.trajectory()]++;
          }
        }
        offset += len;
      }
      out.add(new PackedRow(tokens, positions, segments, mask, old, adv, weights, historyIds));
    }
    // weights need every trajectory's trainable count across all rows
    for (int r = 0; r < rows.size(); r++) {
      PackedRow row = out.get(r);
      int offset = 0;
      for (Item item : rows.get(r)) {
        int len = Math.min(item.history().length(), maxLength);
        double w = 1.0 / (trainablePerTrajectory[item.trajectory()] + 1e-6);
        for (int i = 0; i < len; i++) row.weights()[offset + i] = w;
        offset += len;
      }
    }
    return out;
  }
}
