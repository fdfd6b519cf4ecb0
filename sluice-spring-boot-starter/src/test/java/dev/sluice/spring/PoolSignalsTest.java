package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.health.HealthShedder;
import dev.sluice.spring.app.TestApp;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import javax.sql.DataSource;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The built-in signals of the application's pools: {@code hikari} reads a real HikariCP pool's
 * connections in use and threads waiting, {@code web-server} a real Tomcat's busy workers and a
 * real Jetty {@code QueuedThreadPool}'s use.
 */
class PoolSignalsTest {
  /** A DataSource whose connections do nothing and are always valid: a pool without a database. */
  private static DataSource nothingDataSource() {
    Connection connection = (Connection) Proxy.newProxyInstance(
        PoolSignalsTest.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> switch (method.getName()) {
          case "isValid", "getAutoCommit" -> true;
          case "isClosed", "isReadOnly" -> false;
          case "getTransactionIsolation" -> Connection.TRANSACTION_READ_COMMITTED;
          case "getNetworkTimeout" -> 0;
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          case "toString" -> "nothing";
          default -> null;
        });
    return (DataSource) Proxy.newProxyInstance(PoolSignalsTest.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (proxy, method, args) -> switch (method.getName()) {
          case "getConnection" -> connection;
          case "getLoginTimeout" -> 0;
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          case "toString" -> "nothing";
          default -> null;
        });
  }

  @Test
  void hikari_readsConnectionsInUseAndThreadsWaiting_overThePoolsMost() throws Exception {
    try (HikariDataSource ds = new HikariDataSource()) {
      ds.setDataSource(nothingDataSource());
      ds.setMaximumPoolSize(4);
      ds.setMinimumIdle(4);
      ds.setConnectionTimeout(30_000);
      assertThat(PoolSignals.Hikari.read(ds)).as("not started: healthy").isNaN();
      List<Connection> held = new ArrayList<>();
      held.add(ds.getConnection());
      held.add(ds.getConnection());
      assertThat(PoolSignals.Hikari.read(ds)).isEqualTo(0.5);
      held.add(ds.getConnection());
      held.add(ds.getConnection());
      assertThat(PoolSignals.Hikari.read(ds)).isEqualTo(1.0);
      CountDownLatch asking = new CountDownLatch(1);
      CompletableFuture<Connection> waiting = CompletableFuture.supplyAsync(() -> {
        asking.countDown();
        try {
          return ds.getConnection();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      asking.await();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (ds.getHikariPoolMXBean().getThreadsAwaitingConnection() == 0
          && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(PoolSignals.Hikari.read(ds)).as("a thread waits: still all of it").isEqualTo(1.0);
      held.remove(0).close();
      held.add(waiting.get(10, TimeUnit.SECONDS));
      for (Connection c : held.subList(0, 2)) {
        c.close();
      }
      assertThat(PoolSignals.Hikari.read(ds)).isEqualTo(0.5);
    }
  }

  @Test
  void jetty_readsItsQueuedThreadPoolsUse() throws Exception {
    QueuedThreadPool pool = new QueuedThreadPool(4, 4);
    pool.setReservedThreads(0);
    pool.start();
    try {
      DoubleSupplier read = PoolSignals.Jetty.reader(pool);
      CountDownLatch started = new CountDownLatch(4);
      CountDownLatch release = new CountDownLatch(1);
      for (int i = 0; i < 4; i++) {
        pool.execute(() -> {
          started.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      started.await(10, TimeUnit.SECONDS);
      assertThat(read.getAsDouble()).isEqualTo(1.0);
      pool.execute(() -> { });
      assertThat(read.getAsDouble()).as("a job waits in the queue").isEqualTo(1.0);
      release.countDown();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (read.getAsDouble() > 0 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(read.getAsDouble()).isZero();
    } finally {
      pool.stop();
    }
  }

  /**
   * Reactor Netty's loops: the built-in signal probes them and reads a small lag while they run;
   * on a group of loops that are all stuck, the reading is the waiting probe's age, growing.
   */
  @Test
  void eventLoop_readsTheLoopsLag_andAStuckLoopsAge() throws Exception {
    dev.sluice.health.HealthSignal lag = PoolSignals.EventLoop.signal();
    assertThat(lag.name()).isEqualTo("event-loop");
    assertThat(firstReading(lag)).as("Reactor Netty's running loops' lag, ms")
        .isBetween(0.0, 1000.0);
    io.netty.channel.DefaultEventLoopGroup group = new io.netty.channel.DefaultEventLoopGroup(2);
    CountDownLatch release = new CountDownLatch(1);
    try {
      dev.sluice.health.HealthSignal stuck = PoolSignals.EventLoop.signal(() -> group);
      assertThat(firstReading(stuck)).isBetween(0.0, 1000.0);
      for (io.netty.util.concurrent.EventExecutor loop : group) {
        loop.execute(() -> {
          try {
            release.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      double age = stuck.read();
      while (!(age >= 50.0) && System.nanoTime() < deadline) {
        Thread.onSpinWait();
        age = stuck.read();
      }
      assertThat(age).as("the waiting probe's age, growing while every loop is stuck")
          .isGreaterThanOrEqualTo(50.0);
    } finally {
      release.countDown();
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /** The first reading that is a number (the first probe's delay), within 10 s. */
  private static double firstReading(dev.sluice.health.HealthSignal signal) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    double v = signal.read();
    while (Double.isNaN(v) && System.nanoTime() < deadline) {
      Thread.onSpinWait();
      v = signal.read();
    }
    return v;
  }

  /** A real Tomcat of 4 workers: the web-server signal reads the share of them held busy. */
  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=servlet", "sluice.store.type=memory",
          "spring.autoconfigure.exclude="
              + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
          "server.tomcat.threads.max=4", "server.tomcat.threads.min-spare=4",
          "sluice.health.signals[0].signal=web-server", "sluice.health.signals[0].start=0.8",
          "sluice.health.signals[0].full=1.0", "sluice.health.sample-every=1ms",
          "sluice.health.guard=false"})
  class Tomcat {
    @LocalServerPort
    int port;

    @Autowired
    HealthShedder shedder;

    @Autowired
    org.springframework.context.ApplicationContext context;

    @Test
    void webServer_readsTomcatsBusyWorkers() throws Exception {
      HttpClient http = HttpClient.newHttpClient();
      TestApp.ARRIVED.drainPermits();
      List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        held.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
            + "/held/workers")).timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      assertThat(TestApp.ARRIVED.tryAcquire(2, 10, TimeUnit.SECONDS)).isTrue();
      assertThat(shedder.signals().get(0).name()).isEqualTo("web-server");
      assertThat(PoolSignals.of(context).get("web-server").get().read())
          .as("2 of 4 workers held").isEqualTo(0.5);
      TestApp.GATES.computeIfAbsent("workers", g -> new CompletableFuture<>()).complete("done");
      for (CompletableFuture<HttpResponse<String>> f : held) {
        assertThat(f.get(10, TimeUnit.SECONDS).body()).isEqualTo("done");
      }
      TestApp.GATES.remove("workers");
    }
  }
}
