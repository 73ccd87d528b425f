// The driver's own footprint, as scripts/bench/bench_crash_recovery.py measures it (resident memory and
// open descriptors of the game process), split by where it lives so that growth can be told apart:
// the GC heap and the free space the GC keeps for its allocation budget, JIT-compiled code
// (memfd:doublemapper, .NET's W^X double mapping), native allocations (anonymous memory and
// malloc arenas), mapped files (assemblies), threads, and descriptors by target.
// CRASH_DRIVER_TRACE=1 prints one line of it per kill on stderr, and each assembly loaded after
// the baseline with the stack that loaded it; CRASH_DRIVER_SMAPS=DIR keeps /proc/self/smaps of the
// baseline and the end there (how the C# figures in docs/benchmarks.md were found).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Runtime;
using System.Text.RegularExpressions;
using System.Threading;

namespace GameSidecar.CrashDriver
{
    internal sealed class Footprint
    {
        public static readonly bool Tracing = Environment.GetEnvironmentVariable("CRASH_DRIVER_TRACE") == "1";
        // A folder: /proc/self/smaps is copied there at the baseline and at the end, to compare mapping by mapping.
        private static readonly string? SmapsDir = Environment.GetEnvironmentVariable("CRASH_DRIVER_SMAPS");

        /// <summary>With tracing: each assembly loaded from now on, and from where (a stack without file
        /// and line: reading symbols would itself load assemblies and open the .pdb files).</summary>
        public static void TraceAssemblyLoads()
        {
            if (!Tracing) return;
            AppDomain.CurrentDomain.AssemblyLoad += (_, e) => Console.Error.WriteLine(
                "assembly loaded: " + e.LoadedAssembly.GetName().Name + "\n" + new System.Diagnostics.StackTrace(false));
        }
        private static readonly Regex MappingHeader = new Regex("^[0-9a-f]+-[0-9a-f]+ ", RegexOptions.Compiled);

        public long RssKb { get; private set; }
        public long UntrimmedRssKb { get; private set; } // before malloc_trim: with malloc's free pages
        public long CodeKb { get; private set; }
        public long FileKb { get; private set; }
        public long AnonKb { get; private set; } // anonymous memory: the GC's regions, malloc, thread stacks
        public long GcCommittedKb { get; private set; } // before the aggressive collection: heap + the GC's budget
        public long HeapKb { get; private set; }
        public long GcReleasedKb { get; private set; } // committed after the aggressive collection
        public int Fds { get; private set; }
        public int PipesSockets { get; private set; }
        public int Threads { get; private set; }
        public int JitMethods { get; private set; }
        public Dictionary<string, int> FdTargets { get; private set; } = new Dictionary<string, int>();

        /// <summary>
        /// After a full collection (its committed size is noted), then an aggressive one, which hands
        /// the GC's free regions back to the OS, then malloc_trim, which hands back the free pages of
        /// malloc's arenas (the JIT's scratch memory, freed after each compilation): the RSS then is
        /// memory the process holds, not the reserves the GC and malloc keep, which move by megabytes
        /// from one reading to the next (both are read too: gc committed, and RSS before the trim).
        /// </summary>
        public static Footprint Take(string? label = null)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            var footprint = new Footprint { GcCommittedKb = GC.GetGCMemoryInfo().TotalCommittedBytes / 1024 };
            GC.Collect(2, GCCollectionMode.Aggressive, blocking: true, compacting: true);
            footprint.GcReleasedKb = GC.GetGCMemoryInfo().TotalCommittedBytes / 1024;
            footprint.HeapKb = GC.GetTotalMemory(forceFullCollection: false) / 1024;
            footprint.JitMethods = (int)System.Runtime.JitInfo.GetCompiledMethodCount();
            footprint.Threads = Directory.GetDirectories("/proc/self/task").Length;
            footprint.UntrimmedRssKb = ReadRss();
            try
            {
                MallocTrim(UIntPtr.Zero);
            }
            catch (Exception e) when (e is DllNotFoundException || e is EntryPointNotFoundException)
            {
                // Not glibc: nothing to trim.
            }
            footprint.ReadSmaps();
            footprint.ReadFds();
            if (SmapsDir != null && label != null)
                File.WriteAllText(Path.Combine(SmapsDir, "smaps." + label), File.ReadAllText("/proc/self/smaps"));
            return footprint;
        }

        [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "malloc_trim")]
        private static extern int MallocTrim(UIntPtr pad);

        private static long ReadRss()
        {
            foreach (var line in File.ReadLines("/proc/self/status"))
            {
                if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                    return long.Parse(line.Substring(6).Trim().Split(' ')[0], CultureInfo.InvariantCulture);
            }
            return 0;
        }

        private void ReadSmaps()
        {
            var path = "";
            foreach (var line in File.ReadLines("/proc/self/smaps"))
            {
                if (MappingHeader.IsMatch(line))
                {
                    var parts = line.Split(' ', 6, StringSplitOptions.RemoveEmptyEntries);
                    path = parts.Length == 6 ? parts[5].Trim() : "";
                    continue;
                }
                if (!line.StartsWith("Rss:", StringComparison.Ordinal)) continue;
                var kb = long.Parse(line.Substring(4).Trim().Split(' ')[0], CultureInfo.InvariantCulture);
                RssKb += kb;
                if (path.Contains("doublemapper")) CodeKb += kb;
                else if (path.StartsWith("/", StringComparison.Ordinal)) FileKb += kb;
                else AnonKb += kb; // "", [heap], [stack], [anon:...]
            }
        }

        private void ReadFds()
        {
            foreach (var fd in Directory.GetFileSystemEntries("/proc/self/fd"))
            {
                string target;
                try
                {
                    target = new FileInfo(fd).LinkTarget ?? "?";
                }
                catch (IOException)
                {
                    continue; // the descriptor of the listing itself, closed meanwhile
                }
                Fds++;
                if (target.StartsWith("pipe:", StringComparison.Ordinal) || target.StartsWith("socket:", StringComparison.Ordinal))
                {
                    PipesSockets++;
                    target = target.Substring(0, target.IndexOf(':'));
                }
                FdTargets[target] = FdTargets.GetValueOrDefault(target) + 1;
            }
        }

        /// <summary>One line: this footprint, and what changed since <paramref name="since"/>.</summary>
        public string Describe(string label, Footprint? since)
        {
            string D(long now, long then) => since == null ? "" : $" ({(now - then):+#;-#;0})";
            var text = $"{label}: rss before trim {UntrimmedRssKb}{D(UntrimmedRssKb, since?.UntrimmedRssKb ?? 0)} kB, after {RssKb}{D(RssKb, since?.RssKb ?? 0)} kB = anon {AnonKb}{D(AnonKb, since?.AnonKb ?? 0)}" +
                $" + jit code {CodeKb}{D(CodeKb, since?.CodeKb ?? 0)} + files {FileKb}{D(FileKb, since?.FileKb ?? 0)};" +
                $" gc heap {HeapKb}{D(HeapKb, since?.HeapKb ?? 0)} kB, gc committed before release {GcCommittedKb}{D(GcCommittedKb, since?.GcCommittedKb ?? 0)} kB, after {GcReleasedKb}{D(GcReleasedKb, since?.GcReleasedKb ?? 0)} kB;" +
                $" jit methods {JitMethods}{D(JitMethods, since?.JitMethods ?? 0)}; threads {Threads}{D(Threads, since?.Threads ?? 0)};" +
                $" fds {Fds}{D(Fds, since?.Fds ?? 0)}";
            if (since != null)
            {
                var changed = FdTargets.Keys.Union(since.FdTargets.Keys)
                    .Select(k => (k, d: FdTargets.GetValueOrDefault(k) - since.FdTargets.GetValueOrDefault(k)))
                    .Where(x => x.d != 0).Select(x => $"{x.d:+#;-#} {Path.GetFileName(x.k)}");
                var list = string.Join(", ", changed);
                if (list.Length > 0) text += " [" + list + "]";
            }
            return text;
        }
    }
}
