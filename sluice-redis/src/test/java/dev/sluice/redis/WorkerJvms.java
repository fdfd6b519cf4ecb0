package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Worker JVMs of a test, on the test's class path. A worker builds what it needs (its stores,
 * its limiters), says {@code ready} and waits for the window of its load ({@link #window()});
 * the test opens the window ({@link #go}) once every worker is ready, so the load starts
 * together however long a busy host takes to start the JVMs (a fixed head start of a few seconds
 * was not always enough: four cold JVMs beside a build of other modules).
 */
final class WorkerJvms implements AutoCloseable {
  private static final String READY = "ready";
  /** How long the workers may take to start and say ready. */
  private static final Duration START = Duration.ofMinutes(2);

  private final List<Process> processes = new ArrayList<>();
  private final List<List<String>> outputs = new ArrayList<>();
  private final List<Thread> readers = new ArrayList<>();
  private final CountDownLatch ready;

  private WorkerJvms(int count) {
    this.ready = new CountDownLatch(count);
  }

  /** One JVM of {@code main} per element of {@code args}, with those arguments. */
  static WorkerJvms start(Class<?> main, List<List<String>> args) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // the tests run on the module path: the workers get it all as a class path
    String classPath = System.getProperty("java.class.path");
    String modulePath = System.getProperty("jdk.module.path");
    if (modulePath != null && !modulePath.isEmpty()) {
      classPath = modulePath + File.pathSeparator + classPath;
    }
    WorkerJvms jvms = new WorkerJvms(args.size());
    try {
      for (List<String> a : args) {
        List<String> command = new ArrayList<>(List.of(java, "-Xmx128m", "-cp", classPath,
            main.getName()));
        command.addAll(a);
        jvms.add(new ProcessBuilder(command).redirectErrorStream(true).start());
      }
    } catch (IOException | RuntimeException e) {
      jvms.close();
      throw e;
    }
    return jvms;
  }

  private void add(Process p) {
    List<String> output = Collections.synchronizedList(new ArrayList<>());
    processes.add(p);
    outputs.add(output);
    Thread reader = new Thread(() -> {
      boolean said = false;
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          output.add(line);
          synchronized (this) {
            notifyAll();   // awaitLine
          }
          if (!said && line.equals(READY)) {
            said = true;
            ready.countDown();
          }
        }
      } catch (IOException e) {
        output.add("(reading the worker's output failed: " + e + ")");
      } finally {
        if (!said) {
          ready.countDown();   // ended without saying ready: go() names its output
        }
        synchronized (this) {
          notifyAll();   // awaitLine
        }
      }
    }, "worker-output-" + processes.size());
    reader.setDaemon(true);
    reader.start();
    readers.add(reader);
  }

  /**
   * Waits until every worker said ready, then opens the window of the load: from 200 ms from
   * now, {@code loadMillis} long. Answers the window's start (epoch milliseconds).
   */
  long go(long loadMillis) throws Exception {
    assertThat(ready.await(START.toMillis(), TimeUnit.MILLISECONDS))
        .as("the workers said ready within %s: %s", START, outputs).isTrue();
    for (int i = 0; i < processes.size(); i++) {
      assertThat(outputs.get(i)).as("worker %s said ready (exit %s)", i,
          processes.get(i).isAlive() ? "none yet" : processes.get(i).exitValue()).contains(READY);
    }
    long start = System.currentTimeMillis() + 200;
    for (Process p : processes) {
      Writer in = new java.io.OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
      in.write("go " + start + " " + (start + loadMillis) + "\n");
      in.flush();
    }
    return start;
  }

  /**
   * Waits for every worker to end (within {@code timeout} in all), each with exit status 0;
   * answers each worker's output lines.
   */
  List<List<String>> finish(Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<List<String>> all = new ArrayList<>();
    for (int i = 0; i < processes.size(); i++) {
      Process p = processes.get(i);
      long left = Math.max(0, deadline - System.nanoTime());
      assertThat(p.waitFor(left, TimeUnit.NANOSECONDS)).as("worker %s ended: %s", i,
          outputs.get(i)).isTrue();
      readers.get(i).join(TimeUnit.NANOSECONDS.toMillis(Math.max(left, 1_000_000_000L)));
      List<String> output = List.copyOf(outputs.get(i));
      assertThat(p.exitValue()).as(String.join("\n", output)).isZero();
      all.add(output);
    }
    return all;
  }

  /**
   * Waits (as long as the workers may take to start) until a worker printed {@code line}, for a
   * worker that does not wait for a window.
   */
  synchronized void awaitLine(String line) throws InterruptedException {
    long deadline = System.nanoTime() + START.toNanos();
    while (outputs.stream().noneMatch(o -> o.contains(line))) {
      long left = deadline - System.nanoTime();
      boolean ended = processes.stream().noneMatch(Process::isAlive);
      assertThat(left > 0 && !ended).as("a worker printed %s within %s: %s", line, START,
          outputs).isTrue();
      TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, 100_000_000L));
    }
  }

  /** After {@link #close}: whether every worker ended within {@code timeout}. */
  boolean awaitKilled(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Process p : processes) {
      if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
        return false;
      }
    }
    return true;
  }

  @Override
  public void close() {
    processes.forEach(Process::destroyForcibly);
  }

  /**
   * In a worker, once it is built: says ready and answers the window the test opens,
   * {@code {start, end}} in epoch milliseconds.
   */
  static long[] window() throws IOException {
    System.out.println(READY);
    System.out.flush();
    String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
        .readLine();
    if (line == null || !line.startsWith("go ")) {
      throw new IllegalStateException("expected the test's \"go <start> <end>\" but read " + line);
    }
    String[] parts = line.split(" ");
    return new long[] {Long.parseLong(parts[1]), Long.parseLong(parts[2])};
  }
}
