package dev.troupe.protocol.cluster;

/** Cluster roles a node can take; a one-node cluster has all three. */
public final class Roles {
  /** Hosts the HTTP server and sharding proxies only. */
  public static final String GATEWAY = "gateway";

  /** Hosts ModelWorker entities (engines). */
  public static final String WORKER = "worker";

  /** Hosts training jobs, trajectory logs and the model registry. */
  public static final String TRAINER = "trainer";

  private Roles() {}
}
