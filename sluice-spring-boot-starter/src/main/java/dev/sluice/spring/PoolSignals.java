package dev.sluice.spring;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import dev.sluice.health.HealthSignal;
import dev.sluice.health.Signals;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.concurrent.Executor;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ThreadPool;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.boot.web.embedded.jetty.JettyWebServer;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.server.WebServer;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;
import reactor.netty.http.HttpResources;

/**
 * The built-in health signals that read the application's own pools: {@code hikari} (every
 * HikariCP pool of the context, the fullest: connections in use and threads waiting for one over
 * its most), {@code web-server} (the embedded server's worker threads: Tomcat's connector
 * executor, Jetty's {@code QueuedThreadPool}) and {@code event-loop} (Reactor Netty's event
 * loops' lag, in milliseconds). Each is resolved at its first reading, once the
 * pools exist, and reads {@code NaN} (healthy) until then or where there is nothing to read (a
 * Netty or Undertow server, a pool not started yet). The classes of each library are touched only
 * when the library is on the class path.
 */
final class PoolSignals {
  static final String HIKARI = "hikari";
  static final String WEB_SERVER = "web-server";
  static final String EVENT_LOOP = "event-loop";

  private PoolSignals() {}

  /** The pool signals this application can have, by name (hikari only with HikariCP). */
  static Map<String, Supplier<HealthSignal>> of(ApplicationContext context) {
    Map<String, Supplier<HealthSignal>> all = new LinkedHashMap<>();
    ClassLoader loader = context.getClassLoader();
    if (ClassUtils.isPresent("com.zaxxer.hikari.HikariDataSource", loader)) {
      all.put(HIKARI, () -> HealthSignal.of(HIKARI, new Lazy(() -> Hikari.reader(context))));
    }
    all.put(WEB_SERVER, () -> HealthSignal.of(WEB_SERVER,
        new Lazy(() -> webServer(context, loader))));
    if (ClassUtils.isPresent("reactor.netty.http.HttpResources", loader)) {
      all.put(EVENT_LOOP, EventLoop::signal);
    }
    return all;
  }

  /** The reader of the context's web server's pool, null while there is no server yet. */
  private static DoubleSupplier webServer(ApplicationContext context, ClassLoader loader) {
    if (!(context instanceof WebServerApplicationContext web)) {
      return () -> Double.NaN;
    }
    WebServer server = web.getWebServer();
    if (server == null) {
      return null;
    }
    if (ClassUtils.isPresent("org.apache.catalina.startup.Tomcat", loader)
        && server instanceof TomcatWebServer tomcat) {
      return Tomcat.reader(tomcat);
    }
    if (ClassUtils.isPresent("org.eclipse.jetty.server.Server", loader)
        && server instanceof JettyWebServer jetty) {
      return Jetty.reader(jetty.getServer().getThreadPool());
    }
    return () -> Double.NaN;
  }

  /** A reading resolved at its first use: NaN until the resolver finds what to read. */
  private static final class Lazy implements DoubleSupplier {
    private final Supplier<DoubleSupplier> resolve;
    private volatile DoubleSupplier reader;

    Lazy(Supplier<DoubleSupplier> resolve) {
      this.resolve = resolve;
    }

    @Override
    public double getAsDouble() {
      DoubleSupplier r = reader;
      if (r == null) {
        r = resolve.get();
        if (r == null) {
          return Double.NaN;
        }
        reader = r;
      }
      return r.getAsDouble();
    }
  }

  /** HikariCP: touched only when it is on the class path. */
  static final class Hikari {
    private Hikari() {}

    /** The fullest of the context's HikariCP pools, read each time (pools start lazily). */
    static DoubleSupplier reader(ListableBeanFactory beans) {
      Map<String, DataSource> all = beans.getBeansOfType(DataSource.class, false, false);
      return () -> {
        double fullest = Double.NaN;
        for (DataSource ds : all.values()) {
          double v = ds instanceof HikariDataSource h ? read(h) : Double.NaN;
          if (!Double.isNaN(v)) {
            fullest = Double.isNaN(fullest) ? v : Math.max(fullest, v);
          }
        }
        return fullest;
      };
    }

    /**
     * One pool: connections in use and threads waiting for one over its most, at most 1 (a thread
     * waiting means every connection is in use); NaN before the pool starts.
     */
    static double read(HikariDataSource ds) {
      HikariPoolMXBean pool = ds.getHikariPoolMXBean();
      int max = ds.getMaximumPoolSize();
      if (pool == null || max <= 0) {
        return Double.NaN;
      }
      double used = pool.getActiveConnections() + pool.getThreadsAwaitingConnection();
      return Math.min(1, used / max);
    }
  }

  /**
   * Tomcat, read by reflection: its jar repeats the Servlet API's packages, so compiling against
   * it would split them in this module's build. The connector's executor is Tomcat's own
   * {@code ThreadPoolExecutor} (or the JDK's), whose public {@code getActiveCount} and {@code
   * getMaximumPoolSize} say its use.
   */
  static final class Tomcat {
    private Tomcat() {}

    /** The connector executor's busy threads over its most (NaN for another executor). */
    static DoubleSupplier reader(TomcatWebServer server) {
      Object executor;
      Method active;
      Method most;
      try {
        Object tomcat = server.getClass().getMethod("getTomcat").invoke(server);
        Object connector = tomcat.getClass().getMethod("getConnector").invoke(tomcat);
        Object handler = connector.getClass().getMethod("getProtocolHandler").invoke(connector);
        executor = handler.getClass().getMethod("getExecutor").invoke(handler);
        if (executor == null) {
          return () -> Double.NaN;
        }
        active = executor.getClass().getMethod("getActiveCount");
        most = executor.getClass().getMethod("getMaximumPoolSize");
      } catch (ReflectiveOperationException | RuntimeException e) {
        return () -> Double.NaN;   // another executor (virtual threads), or another Tomcat
      }
      return () -> {
        try {
          int max = (Integer) most.invoke(executor);
          return max <= 0 ? Double.NaN
              : Math.min(1, (double) (Integer) active.invoke(executor) / max);
        } catch (ReflectiveOperationException | RuntimeException e) {
          return Double.NaN;
        }
      };
    }
  }

  /**
   * Reactor Netty: touched only when it is on the class path. The lag, in milliseconds, of the
   * event loops Reactor Netty's servers and clients share ({@code HttpResources}, which Spring
   * Boot's WebFlux server uses unless told otherwise): each probe goes to the group's next loop.
   */
  static final class EventLoop {
    private EventLoop() {}

    static HealthSignal signal() {
      return signal(() -> HttpResources.get().onServer(true));
    }

    /** The lag of the loops {@code loops} names at each probe. */
    static HealthSignal signal(Supplier<? extends Executor> loops) {
      return Signals.lag(EVENT_LOOP, task -> loops.get().execute(task));
    }
  }

  /** Jetty: touched only when it is on the class path. */
  static final class Jetty {
    private Jetty() {}

    /**
     * A {@code QueuedThreadPool}'s use: its utilization rate (busy threads over the most it may
     * have, less those reserved), or 1 while jobs wait in its queue; NaN for another pool.
     */
    static DoubleSupplier reader(ThreadPool pool) {
      if (!(pool instanceof QueuedThreadPool q)) {
        return () -> Double.NaN;
      }
      return () -> q.getQueueSize() > 0 ? 1 : Math.min(1, Math.max(0, q.getUtilizationRate()));
    }
  }
}
