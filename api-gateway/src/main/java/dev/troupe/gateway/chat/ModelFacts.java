package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.SamplingDefaults;

/**
 * What request validation must know about the served model.
 *
 * @param name the served model name (written into responses)
 * @param maxModelLen context length in tokens
 * @param schedulingPolicy {@code fcfs} or {@code priority}
 * @param multimodal whether the model accepts media parts (images, audio, video); none does yet
 * @param samplingDefaults the model's generation-config sampling defaults, used for the fields a
 *     request leaves out (never null)
 */
public record ModelFacts(
    String name,
    int maxModelLen,
    String schedulingPolicy,
    boolean multimodal,
    SamplingDefaults samplingDefaults) {
  public static final String FCFS = "fcfs";
  public static final String PRIORITY = "priority";

  public ModelFacts {
    if (name == null || name.isBlank()) throw new IllegalArgumentException("name is required");
    if (maxModelLen < 1) throw new IllegalArgumentException("maxModelLen must be positive");
    if (schedulingPolicy == null) schedulingPolicy = FCFS;
    if (samplingDefaults == null) samplingDefaults = SamplingDefaults.NONE;
  }

  /** A model without generation-config sampling defaults (OpenAI's apply). */
  public ModelFacts(String name, int maxModelLen, String schedulingPolicy, boolean multimodal) {
    this(name, maxModelLen, schedulingPolicy, multimodal, SamplingDefaults.NONE);
  }

  public boolean priorityScheduling() {
    return PRIORITY.equalsIgnoreCase(schedulingPolicy);
  }
}
