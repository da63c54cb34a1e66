package dev.troupe.engine.sampling;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One engine step's forward pass and sampling stage, as one call: the seam where a runner samples
 * on its own device. The engine core names, before the forward pass, every row that needs a token
 * (the chunk whose last logits it samples and the choice's {@link Sampler}) and the chunks whose
 * logits it needs itself (prompt logprobs, beam search).
 *
 * <ul>
 *   <li>A runner without {@link DeviceSampling} (the CPU runner): {@link ModelRunner#forward}, then
 *       every row through its sampler on the host ({@link BatchSampler}).
 *   <li>A {@link DeviceSampling} runner (the CUDA runner): each row whose step the device can apply
 *       exactly ({@link Sampler#deviceParams()} not null) is sampled there, inside {@link
 *       DeviceSampling#forwardSample}, and only its token and raw logprobs come back. The others —
 *       custom logits processors, token constraints (structured outputs), logprobs of the whole
 *       vocabulary — fall back, per row: their chunk's logits come to the host and their sampler
 *       runs there, exactly as on a CPU runner. Nothing is sampled differently in silence.
 * </ul>
 *
 * Either way a row's token is the one its sampler's {@link Sampler#next} would pick from the same
 * logits with the same uniform (the device draws in the sampler's order with the sampler's own
 * draw), and its logprobs agree to float rounding.
 *
 * <p>Isolation: a row whose own state throws yields its error ({@link BatchSampler.Outcome}) and
 * the others are sampled; {@link #run} itself throws only when the forward pass fails, and then
 * nothing was sampled: every sampler keeps the uniform it drew for the step until the step is run
 * again.
 *
 * <p>Thread: the engine's.
 */
public final class SamplingStage {

  /** One row that needs a token: the chunk whose last logits it samples, and its sampler. */
  public record Row(int chunk, Sampler sampler) {}

  /**
   * @param logits per chunk, its logits as {@link ModelRunner#forward} returns them, where the
   *     caller asked for them (null elsewhere on a device runner)
   * @param outcomes per row, in order
   */
  public record Result(List<float[][]> logits, List<BatchSampler.Outcome> outcomes) {}

  private final ModelRunner runner;
  private final DeviceSampling device;
  private final BatchSampler host = new BatchSampler();
  private long deviceRows, hostRows;

  private SamplingStage(ModelRunner runner) {
    this.runner = runner;
    this.device = runner instanceof DeviceSampling d ? d : null;
  }

  /** The stage for {@code runner}: on its device when it has {@link DeviceSampling}. */
  public static SamplingStage of(ModelRunner runner) {
    return new SamplingStage(runner);
  }

  /** Whether rows are sampled on the runner's device (those it can express). */
  public boolean onDevice() {
    return device != null;
  }

  /** Rows sampled on the device, and on the host, since start. */
  public long deviceRows() {
    return deviceRows;
  }

  public long hostRows() {
    return hostRows;
  }

  /**
   * Runs the step's forward pass over {@code batch} and samples every row.
   *
   * @param hostLogits per chunk, whether the caller needs its logits
   * @throws RuntimeException (or an {@link Error}) when the forward pass fails
   */
  public Result run(List<SequenceChunk> batch, boolean[] hostLogits, List<Row> rows) {
    if (device == null) {
      List<float[][]> logits = runner.forward(batch);
      hostRows += rows.size();
      return new Result(logits, host.sample(hostRowsOf(rows, logits)));
    }
    BatchSampler.Outcome[] outcomes = new BatchSampler.Outcome[rows.size()];
    boolean[] needed = Arrays.copyOf(hostLogits, batch.size());
    List<DeviceSampling.Row> onDevice = new ArrayList<>();
    List<Integer> deviceIndex = new ArrayList<>(), hostIndex = new ArrayList<>();
    for (int i = 0; i < rows.size(); i++) {
      Row row = rows.get(i);
      try {
        DeviceSampling.Params p = row.sampler().deviceParams();
        if (p == null) {
          needed[row.chunk()] = true;
          hostIndex.add(i);
        } else {
          onDevice.add(new DeviceSampling.Row(row.chunk(), p));
          deviceIndex.add(i);
        }
      } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
        outcomes[i] = new BatchSampler.Outcome(null, e);
      }
    }
    DeviceSampling.Step step = device.forwardSample(batch, needed, onDevice);
    for (int j = 0; j < onDevice.size(); j++)
      outcomes[deviceIndex.get(j)] =
          new BatchSampler.Outcome(sample(step.samples().get(j), onDevice.get(j).params()), null);
    List<Row> fallback = new ArrayList<>(hostIndex.size());
    for (int i : hostIndex) fallback.add(rows.get(i));
    List<BatchSampler.Outcome> sampled = host.sample(hostRowsOf(fallback, step.logits()));
    for (int j = 0; j < hostIndex.size(); j++) outcomes[hostIndex.get(j)] = sampled.get(j);
    deviceRows += onDevice.size();
    hostRows += hostIndex.size();
    return new Result(step.logits(), Arrays.asList(outcomes));
  }

  private static List<BatchSampler.Row> hostRowsOf(List<Row> rows, List<float[][]> logits) {
    List<BatchSampler.Row> out = new ArrayList<>(rows.size());
    for (Row r : rows) {
      float[][] chunk = logits.get(r.chunk());
      out.add(new BatchSampler.Row(r.sampler(), chunk[chunk.length - 1]));
    }
    return out;
  }

  /**
   * A device result as the host sampler reports it: the token, and with logprobs vLLM's dictionary
   * (the token first, then the top k by rank; the token keeps its top-k rank when among them),
   * floored at {@link Logprobs#FLOOR}.
   */
  static Sample sample(DeviceSampling.Result r, DeviceSampling.Params p) {
    int token = r.token();
    if (p.logprobs() < 0) return new Sample(token, Float.NaN, 0, null);
    int[] ids = r.topIds();
    int inTop = -1;
    for (int j = 0; j < ids.length; j++) if (ids[j] == token) inTop = j;
    List<TokenLogprob> entries = new ArrayList<>(ids.length + 1);
    entries.add(
        new TokenLogprob(token, Logprobs.floor(r.logprob()), inTop >= 0 ? inTop + 1 : r.rank()));
    for (int j = 0; j < ids.length; j++)
      if (ids[j] != token)
        entries.add(new TokenLogprob(ids[j], Logprobs.floor(r.topLogprobs()[j]), j + 1));
    return new Sample(token, entries.get(0).logprob(), entries.get(0).rank(), entries);
  }
}
