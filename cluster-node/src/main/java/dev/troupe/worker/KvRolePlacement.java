package dev.troupe.worker;

import dev.troupe.protocol.cluster.KvRole;
import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardCoordinator.ActorSystemDependentAllocationStrategy;
import org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.dispatch.Futures;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.immutable.IndexedSeq;
import scala.concurrent.Future;
import scala.jdk.javaapi.CollectionConverters;
import scala.jdk.javaapi.FutureConverters;

/**
 * Where sharding places model replicas ({@code ModelWorker} shards), aware of prefill/decode roles
 * ({@code --kv-role}, which each worker node advertises as cluster roles, {@link
 * KvRoles#memberRoles}). For a model some worker node declares {@code prefill} or {@code decode}
 * for, the model's replicas are spread over the roles its nodes have: a replica goes to a node of
 * the role with the fewest of the model's replicas ({@code prefill} and {@code decode} before
 * {@code both} on a tie), then to the node with the fewest shards; so a prefill node and a decode
 * node each get one of two replicas, and a {@code both} node only a third. Rebalancing moves one
 * replica towards a role that has none: from a role holding two or more, or, for a declared role,
 * from a {@code both} node; it never moves the last replica of a role otherwise, and Pekko's
 * default rebalancing leaves such a model's replicas alone. Replicas of models no node declares a
 * role for are placed and rebalanced by Pekko's default strategy (fewest shards), as before. A role
 * its nodes declare but no replica of the model holds (fewer replicas than roles) is logged at WARN
 * once per change.
 *
 * <p>Runs on the shard coordinator (the oldest worker node); a shard is mapped back to its replica
 * through the configured models and the entity's message extractor (shard ids are hashes of the
 * entity ids). A shard holding replicas of several models (a hash collision) follows its first
 * replica's model.
 */
final class KvRolePlacement implements ActorSystemDependentAllocationStrategy {
  private static final Logger log = LoggerFactory.getLogger(KvRolePlacement.class);

  private final ShardAllocationStrategy fallback;
  private final Map<String, String> modelOfShard = new HashMap<>();
  private final Map<String, String> warned = new HashMap<>();
  private volatile Cluster cluster;

  KvRolePlacement(
      ShardAllocationStrategy fallback,
      ServedModels models,
      ShardingMessageExtractor<?, ?> extractor) {
    this.fallback = fallback;
    for (ServedModel m : models.models())
      for (int i = 0; i < m.replicas(); i++)
        modelOfShard.putIfAbsent(
            extractor.shardId(ModelWorkerProtocol.entityId(m.name(), i)), m.name());
  }

  @Override
  public void start(ActorSystem system) {
    cluster = Cluster.get(system);
    if (fallback instanceof ActorSystemDependentAllocationStrategy s) s.start(system);
  }

  @Override
  public Future<ActorRef> allocateShard(
      ActorRef requester,
      String shardId,
      scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current) {
    String model = modelOfShard.get(shardId);
    Map<ActorRef, KvRole> roles = model == null ? Map.of() : rolesOf(model, current);
    if (!declared(roles)) return fallback.allocateShard(requester, shardId, current);
    Map<ActorRef, List<String>> shards = asJava(current);
    Map<KvRole, Integer> held = held(model, roles, shards);
    ActorRef chosen =
        roles.keySet().stream()
            .min(
                Comparator.<ActorRef>comparingInt(r -> rank(roles.get(r), held))
                    .thenComparingInt(r -> shards.get(r).size()))
            .orElseThrow();
    held.merge(roles.get(chosen), 1, Integer::sum);
    warnUncovered(model, held);
    log.debug(
        "{} ({}) placed on a {} node: {}", shardId, model, roles.get(chosen).wireName(), chosen);
    return Futures.successful(chosen);
  }

  @Override
  public Future<scala.collection.immutable.Set<String>> rebalance(
      scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current,
      scala.collection.immutable.Set<String> inProgress) {
    Map<ActorRef, List<String>> shards = asJava(current);
    Set<String> moving = CollectionConverters.asJava(inProgress);
    Set<String> placedByRole = new HashSet<>();
    Set<String> moves = new TreeSet<>();
    for (String model : new TreeSet<>(modelOfShard.values())) {
      Map<ActorRef, KvRole> roles = rolesOf(model, current);
      if (!declared(roles)) continue;
      Map<KvRole, Integer> held = held(model, roles, shards);
      for (List<String> s : shards.values())
        for (String shard : s) if (model.equals(modelOfShard.get(shard))) placedByRole.add(shard);
      KvRole uncovered =
          held.keySet().stream()
              .filter(r -> held.get(r) == 0)
              .min(Comparator.comparingInt(r -> r == KvRole.BOTH ? 1 : 0))
              .orElse(null);
      if (uncovered == null || moving.stream().anyMatch(s -> model.equals(modelOfShard.get(s))))
        continue;
      // one of the model's replicas its role can spare: a second one, or a both node's for a
      // declared role
      for (Map.Entry<ActorRef, List<String>> e : shards.entrySet()) {
        KvRole role = roles.get(e.getKey());
        if (role == null) continue;
        boolean spares = held.get(role) > 1 || (role == KvRole.BOTH && uncovered != KvRole.BOTH);
        String spare =
            e.getValue().stream()
                .filter(s -> model.equals(modelOfShard.get(s)))
                .findFirst()
                .orElse(null);
        if (spare != null && spares) {
          log.info(
              "{} ({}) moves towards a {} node, which holds none",
              spare,
              model,
              uncovered.wireName());
          moves.add(spare);
          break;
        }
      }
    }
    CompletionStage<scala.collection.immutable.Set<String>> all =
        FutureConverters.asJava(fallback.rebalance(current, inProgress))
            .thenApply(
                byFallback -> {
                  Set<String> out = new TreeSet<>(moves);
                  for (String s : CollectionConverters.asJava(byFallback))
                    if (!placedByRole.contains(s)) out.add(s);
                  return CollectionConverters.asScala(out).toSet();
                });
    return FutureConverters.asScala(all);
  }

  /** The declared role for {@code model} of each region's node that is up. */
  private Map<ActorRef, KvRole> rolesOf(
      String model, scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current) {
    Cluster c = cluster;
    Map<Address, Member> members = new HashMap<>();
    if (c != null)
      for (Member m : c.state().getMembers())
        if (m.status() == MemberStatus.up()) members.put(m.address(), m);
    Map<ActorRef, KvRole> roles = new LinkedHashMap<>();
    for (ActorRef region : CollectionConverters.asJava(current.keySet())) {
      Address at = region.path().address();
      Member m = members.get(at.hasLocalScope() && c != null ? c.selfAddress() : at);
      if (m != null) roles.put(region, KvRoles.fromMemberRoles(m.getRoles()).of(model));
    }
    return roles;
  }

  /** Whether any node declares a role other than both. */
  private static boolean declared(Map<ActorRef, KvRole> roles) {
    return roles.values().stream().anyMatch(r -> r != KvRole.BOTH);
  }

  /** The model's replicas on nodes of each role the regions have (0 for one that has none). */
  private Map<KvRole, Integer> held(
      String model, Map<ActorRef, KvRole> roles, Map<ActorRef, List<String>> shards) {
    Map<KvRole, Integer> held = new LinkedHashMap<>();
    for (KvRole r : roles.values()) held.put(r, 0);
    for (Map.Entry<ActorRef, KvRole> e : roles.entrySet())
      for (String s : shards.get(e.getKey()))
        if (model.equals(modelOfShard.get(s))) held.merge(e.getValue(), 1, Integer::sum);
    return held;
  }

  /** Lower is placed first: by the model's replicas the role has; declared roles before both. */
  private static int rank(KvRole role, Map<KvRole, Integer> held) {
    return 2 * held.get(role) + (role == KvRole.BOTH ? 1 : 0);
  }

  private void warnUncovered(String model, Map<KvRole, Integer> held) {
    List<String> none = new ArrayList<>();
    held.forEach(
        (role, n) -> {
          if (n == 0 && role != KvRole.BOTH) none.add(role.wireName());
        });
    String now = String.join(",", none);
    if (now.equals(warned.getOrDefault(model, ""))) return;
    warned.put(model, now);
    if (!none.isEmpty())
      log.warn(
          "model {}: no replica on a node declaring --kv-role {} yet (more roles declared than"
              + " replicas placed so far; raise --replicas {}=N to cover them)",
          model,
          now,
          model);
  }

  private static Map<ActorRef, List<String>> asJava(
      scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current) {
    Map<ActorRef, List<String>> out = new LinkedHashMap<>();
    CollectionConverters.asJava(current)
        .forEach((region, s) -> out.put(region, List.copyOf(CollectionConverters.asJava(s))));
    return out;
  }
}
