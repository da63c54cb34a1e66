package dev.troupe.worker.kv;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * {@code troupe.kv-transfer}: the node's KV transfer server and the decode side's pull.
 *
 * @param host the interface to bind and report ({@code ""}: the node's remoting hostname)
 * @param port 0 for an ephemeral port
 * @param lease how long a prefill replica holds unpulled blocks
 * @param recompute the load-failure policy: true = {@code recompute}, false = {@code fail}
 * @param batchBytes KV bytes exported from the engine per message while serving a pull
 * @param pullTimeout how long a pull may take in all
 */
public record KvTransferSettings(
    String host,
    int port,
    Duration lease,
    boolean recompute,
    long batchBytes,
    Duration pullTimeout) {
  public KvTransferSettings {
    if (port < 0 || port > 65535) throw new IllegalArgumentException("port must be in 0..65535");
    if (lease.isNegative() || lease.isZero())
      throw new IllegalArgumentException("troupe.kv-transfer.lease must be > 0");
    if (batchBytes < 1) throw new IllegalArgumentException("batch-bytes must be >= 1");
  }

  public static KvTransferSettings from(Config root) {
    Config c = root.getConfig("troupe.kv-transfer");
    String policy = c.getString("load-failure-policy");
    if (!policy.equals("fail") && !policy.equals("recompute"))
      throw new IllegalArgumentException(
          "troupe.kv-transfer.load-failure-policy must be fail or recompute, not " + policy);
    return new KvTransferSettings(
        c.getString("host"),
        c.getInt("port"),
        c.getDuration("lease"),
        policy.equals("recompute"),
        c.getBytes("batch-bytes"),
        c.getDuration("pull-timeout"));
  }
}
