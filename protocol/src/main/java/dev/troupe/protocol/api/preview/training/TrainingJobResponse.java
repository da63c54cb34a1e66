package dev.troupe.protocol.api.preview.training;

/**
 * {@code POST /v1/preview/training-jobs} answer: the new job's id (W&B {@code
 * TrainingJobResponse}).
 */
public record TrainingJobResponse(String id) {}
