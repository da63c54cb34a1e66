package dev.troupe.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The house rules on package structure (STYLE.md), checked on the compiled main classes of every
 * module with ArchUnit: no package cycles, serving code never imports training, ND4J stays in
 * training, the engine and scheduler are plain Java and never see the worker's wire messages (the
 * worker maps engine outputs onto them), every sharded entity type is started by its own class, the
 * gateway reaches the engine only through its one encoder seam, and its replica logic lives in one
 * package.
 */
class ArchitectureTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    // main classes only: test classes and test jars (the cluster-node test-jar) are excluded
    ImportOption mainOnly =
        location ->
            !location.contains("/test-classes/")
                && !location.contains("-tests.jar")
                && ImportOption.Predefined.DO_NOT_INCLUDE_TESTS.includes(location);
    classes = new ClassFileImporter().withImportOption(mainOnly).importPackages("dev.troupe");
  }

  @Test
  void noPackageCycles() {
    // every package is its own slice: a cycle between a package and its subpackage counts too
    slices().matching("dev.troupe.(**)").should().beFreeOfCycles().check(classes);
  }

  @Test
  void onlyTrainingUsesNd4j() {
    // the CPU runner calls OpenBLAS through JavaCPP and computes the rest in Java; ND4J is the
    // trainer's tensor library (docs/engine.md)
    noClasses()
        .that()
        .resideOutsideOfPackages("dev.troupe.training..", "dev.troupe.bench..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("org.nd4j..")
        .check(classes);
  }

  @Test
  void servingDoesNotImportTraining() {
    noClasses()
        .that()
        .resideInAnyPackage(
            "dev.troupe.engine..",
            "dev.troupe.worker..",
            "dev.troupe.scheduler..",
            "dev.troupe.gateway..",
            "dev.troupe.adapters..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.troupe.training..")
        .check(classes);
  }

  @Test
  void theEngineAndSchedulerArePlainJava() {
    // no actors, no cluster: the worker owns the engine and speaks for it (STYLE.md, rule 8)
    noClasses()
        .that()
        .resideInAnyPackage("dev.troupe.engine..", "dev.troupe.scheduler..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("org.apache.pekko..")
        .check(classes);
  }

  @Test
  void eachShardedEntityTypeIsStartedByItsOwnClass() {
    // an entity owns its type key and its init (STYLE.md, rule 5): whatever starts a sharded type
    // on a node is the class whose behaviour it hosts; the gateway's proxies are the gateway's
    classes()
        .that()
        .resideOutsideOfPackage("dev.troupe.gateway..")
        .and(START_SHARDING)
        .should(DECLARE_THEIR_BEHAVIOUR)
        .check(classes);
  }

  private static final String CLUSTER_SHARDING =
      "org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding";

  private static final DescribedPredicate<JavaClass> START_SHARDING =
      DescribedPredicate.describe(
          "call ClusterSharding.init",
          c ->
              c.getMethodCallsFromSelf().stream()
                  .anyMatch(
                      call ->
                          call.getName().equals("init")
                              && call.getTargetOwner().getName().equals(CLUSTER_SHARDING)));

  private static final ArchCondition<JavaClass> DECLARE_THEIR_BEHAVIOUR =
      new ArchCondition<>(
          "declare the behaviour they host (a static create returning a Behavior)") {
        @Override
        public void check(JavaClass c, ConditionEvents events) {
          boolean entity =
              c.getMethods().stream()
                  .anyMatch(
                      m ->
                          m.getName().equals("create")
                              && m.getModifiers().contains(JavaModifier.STATIC)
                              && m.getRawReturnType()
                                  .getName()
                                  .equals("org.apache.pekko.actor.typed.Behavior"));
          events.add(
              new SimpleConditionEvent(
                  c,
                  entity,
                  c.getName() + " starts a sharded type but hosts no behaviour of its own"));
        }
      };

  @Test
  void theGatewayReachesTheEngineOnlyThroughTheEncoderSeam() {
    // the gateway tokenizes for cache-aware routing through its PromptTokenizer interface, which
    // deploy's GatewayTokenizers implements with the workers' own PromptEncoder: one encoder
    noClasses()
        .that()
        .resideInAPackage("dev.troupe.gateway..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "dev.troupe.engine..",
            "dev.troupe.worker..",
            "dev.troupe.scheduler..",
            "dev.troupe.node..")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("dev.troupe.deploy..")
        .and()
        .haveNameNotMatching("dev\\.troupe\\.deploy\\.GatewayTokenizers(\\$.*)?")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("dev.troupe.engine.input..", "dev.troupe.engine.tokenizer..")
        .check(classes);
  }

  @Test
  void theReplicaLogicLivesInOnePackage() {
    // which replicas are live and which one serves a request: gateway.replicas alone follows the
    // cluster's membership and reachability (one liveness filter) and holds the Replica* types
    // (one selector); a node's own role check (Member.hasRole) is not liveness, and the cluster
    // view (gateway.cluster) only reports the membership it reads, it routes nothing
    noClasses()
        .that()
        .resideInAPackage("dev.troupe.gateway..")
        .and()
        .resideOutsideOfPackage("dev.troupe.gateway.replicas..")
        .and()
        .resideOutsideOfPackage("dev.troupe.gateway.cluster..")
        .should()
        .dependOnClassesThat()
        .haveNameMatching(
            "org\\.apache\\.pekko\\.cluster\\.(ClusterEvent|MemberStatus|typed\\.Subscribe)\\b.*")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("dev.troupe.gateway..")
        .and()
        .resideOutsideOfPackage("dev.troupe.gateway.replicas..")
        .and()
        .areTopLevelClasses()
        .should()
        .haveSimpleNameStartingWith("Replica")
        .check(classes);
  }

  @Test
  void theEngineSpeaksNoWireMessages() {
    noClasses()
        .that()
        .resideInAnyPackage("dev.troupe.engine..", "dev.troupe.scheduler..")
        .should()
        .dependOnClassesThat()
        .haveNameMatching(
            "dev\\.troupe\\.protocol\\.cluster\\.(ModelWorkerProtocol|WorkerStatus)\\b.*")
        .check(classes);
  }
}
