package dev.troupe.training;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import dev.troupe.training.nd4j.LoraTransformer;
import java.util.LinkedHashMap;
import java.util.Map;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * Training on the CPU: {@link LoraTransformer} (ND4J, FP32) for the model, {@link RlLoss} and
 * {@link AdamW} in plain Java on the host. LoRA adapters or full fine-tuning.
 */
final class Nd4jTrainingBackend implements TrainingBackend {
  private final LoraTransformer model;
  private final AdamW.Hyper hyper;
  private AdamW optimizer;

  Nd4jTrainingBackend(ModelConfig config, WeightSource weights, LoraSpec lora, AdamW.Hyper hyper) {
    this.model = new LoraTransformer(config, weights, lora, DataType.FLOAT);
    this.hyper = hyper;
    this.optimizer = new AdamW(hyper);
  }

  static TrainingBackend.Factory factory() {
    return new TrainingBackend.Factory() {
      @Override
      public TrainingBackend open(
          ModelConfig config, WeightSource weights, LoraSpec lora, AdamW.Hyper hyper, int maxLen) {
        return new Nd4jTrainingBackend(config, weights, lora, hyper);
      }

      @Override
      public String describe() {
        return "CPU (ND4J)";
      }
    };
  }

  @Override
  public ModelConfig config() {
    return model.config();
  }

  @Override
  public String device() {
    return "CPU (ND4J)";
  }

  @Override
  public double[] logprobs(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    return model.forward(tokens, positions, segments, needed).logprobs();
  }

  @Override
  public double[] nextTokenLogprobs(int[] tokens) {
    return model.nextTokenLogprobs(tokens);
  }

  @Override
  public Step step(PackedRow row, TrainingConfig config) {
    double[] loss = new double[1];
    LoraTransformer.Output out =
        model.forwardBackward(
            row.tokens(),
            row.positions(),
            row.segments(),
            row.mask(),
            lp -> {
              RlLoss.Result r =
                  RlLoss.compute(
                      config,
                      lp,
                      row.oldLogprobs(),
                      row.advantages(),
                      row.weights(),
                      row.mask(),
                      row.historyIds());
              loss[0] = r.loss();
              return r.gradient();
            });
    double norm =
        optimizer.update(
            model.parameters(), out.gradients(), config.learningRate(), model.noDecayParameters());
    return new Step(loss[0], entropy(row, out.entropies()), norm);
  }

  /** ART's logged entropy: Σ H_t·w_t·m_t / Σ m_t. */
  static double entropy(PackedRow row, double[] h) {
    double s = 0;
    int n = 0;
    for (int t = 0; t < row.length(); t++)
      if (row.mask()[t]) {
        s += h[t] * row.weights()[t];
        n++;
      }
    return n == 0 ? 0 : s / n;
  }

  @Override
  public Map<String, double[]> parameters() {
    Map<String, double[]> copy = new LinkedHashMap<>();
    model.parameters().forEach((k, v) -> copy.put(k, v.clone()));
    return copy;
  }

  @Override
  public Map<String, long[]> shapes() {
    Map<String, long[]> s = new LinkedHashMap<>();
    for (String name : model.parameters().keySet()) s.put(name, model.shape(name));
    return s;
  }

  @Override
  public LoraAdapter adapter(int version) {
    return model.toAdapter(version);
  }

  @Override
  public AdamW.State optimizerState() {
    return optimizer.state();
  }

  @Override
  public void restore(Map<String, double[]> parameters, AdamW.State state) {
    for (Map.Entry<String, double[]> e : model.parameters().entrySet()) {
      double[] v = parameters.get(e.getKey());
      if (v == null || v.length != e.getValue().length)
        throw new IllegalArgumentException("no parameter of the adapter's shape for " + e.getKey());
      System.arraycopy(v, 0, e.getValue(), 0, v.length);
    }
    optimizer = new AdamW(hyper);
    if (state != null) optimizer.restore(state);
  }

  @Override
  public void close() {
    model.close();
  }
}
