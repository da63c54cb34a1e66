package dev.troupe.engine;

import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.List;

/**
 * A {@link ModelRunner} that samples on its own device, so a step's logits need not leave it: the
 * forward pass and the sampling of every row whose sampler state the device can express run as one
 * call, and only the tokens (with the raw logprobs asked for) come back, plus the logits of the
 * chunks the caller still needs on the host (prompt logprobs, beam search, rows the device cannot
 * sample exactly). The engine core's sampling stage ({@code engine.sampling.SamplingStage}) uses it
 * when a runner implements it; the CPU runner does not (its logits are on the host already).
 *
 * <p>Thread: the runner's.
 */
public interface DeviceSampling {

  /** Top raw logprobs a device row can return; a request asking more samples on the host. */
  int MAX_TOP_LOGPROBS = 20;

  /**
   * Runs one step as {@link ModelRunner#forward} does, then samples each row from the last logits
   * of its chunk on the device.
   *
   * @param batch the step's chunks
   * @param hostLogits per chunk, whether its logits come back (as {@code forward} returns them:
   *     every row of an {@code allLogits} chunk, else the last); null = none
   * @param rows the rows to sample on the device, each naming its chunk (several rows may sample
   *     one chunk: the n choices of a prompt)
   * @return per chunk its host logits (null where not asked) and per row its result, in order
   * @throws RuntimeException when the step fails; nothing is sampled then
   */
  Step forwardSample(List<SequenceChunk> batch, boolean[] hostLogits, List<Row> rows);

  /** One row to sample: the chunk whose last logits it samples and its sampler's state. */
  record Row(int chunk, Params params) {
    public Row {
      if (chunk < 0) throw new IllegalArgumentException("negative chunk index");
      if (params == null) throw new IllegalArgumentException("params are required");
    }
  }

  /**
   * One choice's sampler state for one step, sparse (the host's {@code Sampler} computes it; the
   * device applies it in vLLM V1's order): raw logprobs from the unprocessed row; {@code allowed};
   * {@code masked} (-inf); {@code logit_bias}; the repetition penalty over {@code seen}; frequency
   * and presence over the output counts; then greedy argmax (lowest id on ties) or ÷ temperature,
   * {@code min_p}, {@code top_k}, {@code top_p} and an inverse-CDF draw in token-id order with
   * {@code uniform}.
   *
   * @param greedy argmax (temperature below 1e-5); {@code uniform} is unused
   * @param temperature already raised to 0.01 when in (0, 0.01), as vLLM does
   * @param topK 0 = off
   * @param topP 1 = off
   * @param minP 0 = off
   * @param uniform this step's draw in [0, 1) from the choice's own generator
   * @param logprobs -1 = none, else how many top raw logprobs to return (0 … {@value
   *     #MAX_TOP_LOGPROBS})
   * @param allowed allowed_token_ids, distinct; empty = all
   * @param masked distinct ids set to -inf this step (bad words' banned tokens, the stop ids while
   *     {@code min_tokens} is not reached)
   * @param biasIds logit_bias ids, distinct
   * @param biasValues the biases, clamped to ±100
   * @param repetition repetition penalty (1 = off), applied to {@code seen}
   * @param seen distinct ids of prompt ∪ output (empty when {@code repetition} is 1)
   * @param frequency frequency penalty, with {@code presence} applied to {@code countIds}
   * @param countIds distinct output ids (empty when both penalties are 0), {@code counts} their
   *     occurrences
   */
  record Params(
      boolean greedy,
      float temperature,
      int topK,
      float topP,
      float minP,
      double uniform,
      int logprobs,
      int[] allowed,
      int[] masked,
      int[] biasIds,
      float[] biasValues,
      float repetition,
      int[] seen,
      float frequency,
      float presence,
      int[] countIds,
      int[] counts) {
    public Params {
      if (logprobs > MAX_TOP_LOGPROBS)
        throw new IllegalArgumentException(
            "at most " + MAX_TOP_LOGPROBS + " top logprobs on the device");
      if (biasIds.length != biasValues.length || countIds.length != counts.length)
        throw new IllegalArgumentException("ids and values differ in length");
    }

    /** Plain sampling: no masks, no bias, no penalties, no logprobs. */
    public static Params simple(
        boolean greedy, float temperature, int topK, float topP, float minP, double uniform) {
      int[] none = new int[0];
      return new Params(
          greedy,
          temperature,
          topK,
          topP,
          minP,
          uniform,
          -1,
          none,
          none,
          none,
          new float[0],
          1f,
          none,
          0f,
          0f,
          none,
          none);
    }
  }

  /**
   * What the device chose for a row: the token, and when logprobs were asked its raw logprob (not
   * floored), its rank (entries with a raw logprob at least as high) and the top {@code k} raw
   * logprobs, best first, ties by lower id.
   */
  record Result(int token, float logprob, int rank, int[] topIds, float[] topLogprobs) {}

  /**
   * @param logits per chunk, its logits when asked for, else null
   * @param samples per row, its result
   */
  record Step(List<float[][]> logits, List<Result> samples) {}
}
