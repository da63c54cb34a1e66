package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;

/**
 * The RL hyperparameters of one training job with every default applied: the cluster-side form of
 * the HTTP {@code experimental_config} (where {@code null} means "default"). Defaults follow ART
 * 0.5.5+ (CISPO); see docs/training.md for why.
 *
 * @param advantageBalance b in [-1, 1]: b > 0 scales negative advantages by 1 - b, b < 0 positive
 *     ones by 1 + b
 * @param epsilon lower clip: ratios are clipped to [1 - epsilon, 1 + epsilonHigh]
 * @param epsilonHigh upper clip
 * @param importanceSamplingLevel token, sequence (GSPO), average or geometric_average
 * @param kimiK2Tau null = off; else advantages are shifted by -tau * stop_grad(log ratio)
 * @param learningRate AdamW learning rate (constant schedule)
 * @param maskProbRatio zero the ratio outside (1 - epsilon, 1 + epsilonHigh)
 * @param maxNegativeAdvantageImportanceSamplingWeight null = off; else every ratio is capped at it
 * @param ppo clipped PPO objective; false = CISPO (clipped, stop-gradient IS weight times logprob)
 * @param precalculateLogprobs re-score every row with the job's starting weights and use those as
 *     the old logprobs instead of the sampler's
 * @param scaleRewards divide group advantages by (std + 1e-6)
 */
public record TrainingConfig(
    double advantageBalance,
    double epsilon,
    double epsilonHigh,
    ImportanceSamplingLevel importanceSamplingLevel,
    Double kimiK2Tau,
    double learningRate,
    boolean maskProbRatio,
    Double maxNegativeAdvantageImportanceSamplingWeight,
    boolean ppo,
    boolean precalculateLogprobs,
    boolean scaleRewards)
    implements CborSerializable {

  /** ART's default learning rate (src/art/types.py, sent explicitly by 0.5.5+ clients). */
  public static final double DEFAULT_LEARNING_RATE = 5e-6;

  public TrainingConfig {
    if (!(advantageBalance >= -1 && advantageBalance <= 1))
      throw new IllegalArgumentException("advantage_balance must be in [-1, 1]");
    if (!(epsilon >= 0)) throw new IllegalArgumentException("epsilon must be >= 0");
    if (!(epsilonHigh >= 0)) throw new IllegalArgumentException("epsilon_high must be >= 0");
    if (importanceSamplingLevel == null)
      throw new IllegalArgumentException("importance_sampling_level is required");
    if (!(learningRate >= 0) || Double.isInfinite(learningRate))
      throw new IllegalArgumentException("learning_rate must be a finite number >= 0");
    if (kimiK2Tau != null && !Double.isFinite(kimiK2Tau))
      throw new IllegalArgumentException("kimi_k2_tau must be finite");
    if (maxNegativeAdvantageImportanceSamplingWeight != null
        && !(maxNegativeAdvantageImportanceSamplingWeight > 0))
      throw new IllegalArgumentException(
          "max_negative_advantage_importance_sampling_weight must be > 0");
  }

  /** Every field at its default (CISPO, epsilon 1, epsilon_high 4, lr 5e-6). */
  public static TrainingConfig defaults() {
    return resolve(null, null, null, null, null, null, null, null, null, null, null);
  }

  /**
   * Applies the defaults to nullable inputs, as ART 0.5.5+ does: {@code ppo} false; epsilon 0.2
   * under PPO and 1.0 under CISPO; epsilon_high = epsilon under PPO and 4.0 under CISPO.
   */
  public static TrainingConfig resolve(
      Double advantageBalance,
      Double epsilon,
      Double epsilonHigh,
      String importanceSamplingLevel,
      Double kimiK2Tau,
      Double learningRate,
      Boolean maskProbRatio,
      Double maxNegativeAdvantageImportanceSamplingWeight,
      Boolean ppo,
      Boolean precalculateLogprobs,
      Boolean scaleRewards) {
    boolean isPpo = ppo != null && ppo;
    double eps = epsilon != null ? epsilon : isPpo ? 0.2 : 1.0;
    double epsHigh = epsilonHigh != null ? epsilonHigh : isPpo ? eps : 4.0;
    return new TrainingConfig(
        advantageBalance == null ? 0.0 : advantageBalance,
        eps,
        epsHigh,
        importanceSamplingLevel == null
            ? ImportanceSamplingLevel.TOKEN
            : ImportanceSamplingLevel.parse(importanceSamplingLevel),
        kimiK2Tau,
        learningRate == null ? DEFAULT_LEARNING_RATE : learningRate,
        maskProbRatio != null && maskProbRatio,
        maxNegativeAdvantageImportanceSamplingWeight,
        isPpo,
        precalculateLogprobs != null && precalculateLogprobs,
        scaleRewards == null || scaleRewards);
  }

  /** Which importance ratio the objective uses (ART {@code importance_sampling_level}). */
  public enum ImportanceSamplingLevel {
    TOKEN("token"),
    SEQUENCE("sequence"),
    AVERAGE("average"),
    GEOMETRIC_AVERAGE("geometric_average");

    private final String wireName;

    ImportanceSamplingLevel(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    /** Parses the wire name; unknown names are an {@link IllegalArgumentException}. */
    public static ImportanceSamplingLevel parse(String name) {
      for (ImportanceSamplingLevel level : values()) if (level.wireName.equals(name)) return level;
      throw new IllegalArgumentException(
          "importance_sampling_level must be one of token, sequence, average, geometric_average");
    }
  }
}
