// The xunit suite's entry point as a Windows program: runs every test of
// GameSidecar.Client.Tests in this process through xunit's AssemblyRunner, prints
// each failure and skip, and closes with "N passed, N failed, N skipped".
// Exit code: 0 when nothing failed (and something ran), 1 otherwise, 2 when one test
// runs longer than WINE_TEST_HANG_TIMEOUT seconds (default 300): the run stops there.
//
//   WindowsRunner.exe [--class NAME]... [--method NAME]...
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using Xunit.Runners;

namespace GameSidecar.WindowsRunner
{
    internal static class Program
    {
        private static int Main(string[] args)
        {
            var classes = Values(args, "--class");
            var methods = Values(args, "--method");
            var assembly = Path.Combine(AppContext.BaseDirectory, "GameSidecar.Client.Tests.dll");
            int passed = 0, failed = 0, skipped = 0;
            var gate = new object();
            using var done = new ManualResetEventSlim();
            using var runner = AssemblyRunner.WithoutAppDomain(assembly);
            runner.TestCaseFilter = test =>
                (classes.Count == 0 || classes.Contains(test.TestMethod.TestClass.Class.Name.Split('.').Last()))
                && (methods.Count == 0 || methods.Contains(test.TestMethod.Method.Name));
            // A hung test fails the run loudly (no test here needs minutes; the crash tests wait 60 s at most).
            var hangLimit = TimeSpan.FromSeconds(int.TryParse(Environment.GetEnvironmentVariable("WINE_TEST_HANG_TIMEOUT"), out var s) ? s : 300);
            string? current = null;
            var started = System.Diagnostics.Stopwatch.StartNew();
            runner.OnTestStarting = info => { lock (gate) { current = $"{info.TypeName}.{info.MethodName}"; started.Restart(); } };
            var watchdog = new Thread(() =>
            {
                while (true)
                {
                    Thread.Sleep(1000);
                    lock (gate)
                    {
                        if (current == null || started.Elapsed < hangLimit) continue;
                        Console.WriteLine($"[HANG] nothing new for {hangLimit.TotalSeconds:0} s since {current} started (WINE_TEST_HANG_TIMEOUT)");
                        Console.WriteLine($"{passed} passed, {failed + 1} failed, {skipped} skipped");
                        Console.Out.Flush();
                        Environment.Exit(2);
                    }
                }
            }) { IsBackground = true };
            watchdog.Start();
            runner.OnTestPassed = info => { lock (gate) passed++; };
            runner.OnTestFailed = info =>
            {
                lock (gate)
                {
                    failed++;
                    Console.WriteLine($"[FAIL] {info.TypeName}.{info.MethodName} ({info.ExecutionTime:0.000} s)");
                    Console.WriteLine("  " + info.ExceptionMessage);
                    if (info.ExceptionStackTrace != null) Console.WriteLine(Indent(info.ExceptionStackTrace));
                }
            };
            runner.OnTestSkipped = info =>
            {
                lock (gate)
                {
                    skipped++;
                    Console.WriteLine($"[SKIP] {info.TypeName}.{info.MethodName}: {info.SkipReason}");
                }
            };
            runner.OnErrorMessage = info =>
            {
                lock (gate)
                {
                    failed++;
                    Console.WriteLine($"[ERROR] {info.ExceptionType}: {info.ExceptionMessage}");
                    if (info.ExceptionStackTrace != null) Console.WriteLine(Indent(info.ExceptionStackTrace));
                }
            };
            runner.OnExecutionComplete = info => done.Set();
            // One test at a time, as dotnet test runs this suite's collections under 2 cores.
            runner.Start(parallel: false);
            done.Wait();
            while (runner.Status != AssemblyRunnerStatus.Idle) Thread.Sleep(50);
            Console.WriteLine($"{passed} passed, {failed} failed, {skipped} skipped");
            return failed == 0 && passed > 0 ? 0 : 1;
        }

        private static List<string> Values(string[] args, string flag) =>
            args.Select((a, i) => (a, i)).Where(p => p.a == flag && p.i + 1 < args.Length)
                .Select(p => args[p.i + 1]).ToList();

        private static string Indent(string text) => "    " + text.Replace("\n", "\n    ");
    }
}
