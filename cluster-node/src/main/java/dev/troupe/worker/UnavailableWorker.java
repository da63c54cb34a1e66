package dev.troupe.worker;

import dev.troupe.protocol.cluster.ModelWorkerProtocol;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GetStatus;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ReplicaId;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.TrainingJobProtocol.AdapterCheckpoint;
import dev.troupe.protocol.cluster.WorkerStatus;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * A model replica that cannot serve (unknown or unloadable model): every request gets the reason,
 * its status reports a context length of 0 (the gateway reads that as "cannot serve") and the
 * reason (the launcher prints it and exits).
 */
final class UnavailableWorker {
  private UnavailableWorker() {}

  static Behavior<Command> create(String entityId, ErrorKind kind, String message) {
    return Behaviors.setup(ctx -> behavior(entityId, kind, message, ctx.getSystem()));
  }

  private static Behavior<Command> behavior(
      String entityId, ErrorKind kind, String message, ActorSystem<?> system) {
    return Behaviors.receive(Command.class)
        .onMessage(
            Generate.class,
            g -> {
              g.replyTo().tell(new Failed(g.request().requestId(), kind, message, "model"));
              return Behaviors.same();
            })
        .onMessage(
            Tokenize.class,
            t -> {
              t.replyTo().tell(new Rejected(kind, message, "model"));
              return Behaviors.same();
            })
        .onMessage(
            Detokenize.class,
            d -> {
              d.replyTo().tell(new Rejected(kind, message, "model"));
              return Behaviors.same();
            })
        .onMessage(AdapterCheckpoint.class, c -> Behaviors.same())
        .onMessageEquals(HandOff.INSTANCE, Behaviors::stopped)
        .onMessage(
            Drain.class,
            d -> {
              d.replyTo().tell(new Drain.Drained(entityId)); // nothing is ever in flight here
              return Behaviors.same();
            })
        .onSignal(
            PostStop.class,
            s -> {
              WorkerHealth.get(system).stopped(entityId);
              return Behaviors.same();
            })
        .onMessage(
            GetStatus.class,
            s -> {
              ReplicaId r = ModelWorkerProtocol.parseEntityId(entityId);
              s.replyTo().tell(WorkerStatus.unavailable(entityId, r.model(), message));
              return Behaviors.same();
            })
        .onMessage(
            ModelWorkerProtocol.Describe.class,
            d -> {
              ReplicaId r = ModelWorkerProtocol.parseEntityId(entityId);
              d.replyTo().tell(WorkerStatus.unavailable(entityId, r.model(), message));
              return Behaviors.same();
            })
        .build();
  }
}
