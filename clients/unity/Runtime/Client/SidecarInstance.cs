#nullable enable
// One launched sidecar process: spawn with piped stdin/stdout/stderr and the magic and
// token environment, read the JSON handshake with a timeout, drain stderr into a tail,
// notice the exit (the runtime's Exited event, or a poll after a broken call, which is
// sooner), say truthfully how it ended, stop it (close stdin -> grace -> SIGTERM ->
// SIGKILL), and remove the socket folder the sidecar made in the temp folder.
// SidecarProcess supervises these; one instance per process, never reused.
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Diagnostics;
using System.IO;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace GameSidecar.Client
{
    internal sealed class SidecarInstance
    {
        private const int SigTerm = 15;
        private const int SigKill = 9;
        private static readonly TimeSpan TermGrace = TimeSpan.FromMilliseconds(500);

        private readonly Process _process;
        private readonly TailBuffer _tail;
        private readonly Task _stderrReader;
        private readonly TaskCompletionSource<SidecarExit> _exit =
            new TaskCompletionSource<SidecarExit>(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly string? _ownedDir;
        private int _noted;
        private volatile int _sentSignal; // the last signal this client sent (0 = none)
        private volatile bool _requested;
        private volatile bool _hung;

        private SidecarInstance(Process process, TailBuffer tail, Task stderrReader, Handshake handshake, string token, string? ownedDir)
        {
            _process = process;
            _tail = tail;
            _stderrReader = stderrReader;
            Handshake = handshake;
            Token = token;
            Pid = process.Id;
            _ownedDir = ownedDir;
        }

        public Handshake Handshake { get; }
        public string Token { get; }
        public int Pid { get; }
        /// <summary>Resolves once the exit is noticed; the record is built then.</summary>
        public Task<SidecarExit> Exit => _exit.Task;
        /// <summary>Called synchronously when the exit is noticed, before <see cref="Exit"/> resolves.</summary>
        public Action<SidecarExit>? OnExit { get; set; }
        public string StderrTail() => _tail.Text();
        /// <summary>The runtime's process object (for the tests that check it is released after an exit).</summary>
        internal Process Process => _process;

        /// <summary>Has the process ended? Asks the OS (a non-blocking wait), and notes the exit if so.</summary>
        public bool PollExited()
        {
            bool exited;
            try
            {
                exited = _process.HasExited;
            }
            catch (InvalidOperationException)
            {
                exited = true;
            }
            if (exited) NoteExit();
            return exited;
        }

        /// <summary>
        /// Linux only: the process is a zombie (dead, not yet reaped) or gone. The runtime reaps children
        /// on its own schedule, which a loaded machine can delay past a second; this tells a broken call
        /// that the exit record is coming. False where /proc is not available.
        /// </summary>
        public bool LooksDead()
        {
            // Not on Windows: "/proc/N/stat" is a path on the current drive there, and under Wine that
            // drive can be the Linux root, where /proc exists and N (a Windows pid) names another process.
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows)) return false;
            try
            {
                var stat = File.ReadAllText("/proc/" + Pid + "/stat");
                var close = stat.LastIndexOf(')');
                return close > 0 && close + 2 < stat.Length && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
            }
            catch (Exception e) when (e is FileNotFoundException || e is DirectoryNotFoundException)
            {
                return Directory.Exists("/proc/self"); // reaped already
            }
            catch (Exception e) when (e is IOException || e is UnauthorizedAccessException)
            {
                return false;
            }
        }

        public static async Task<SidecarInstance> StartAsync(SidecarProcessOptions options, CancellationToken cancellationToken)
        {
            var token = options.Token ?? NewToken();
            var info = new ProcessStartInfo
            {
                FileName = options.Executable,
                UseShellExecute = false,
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                CreateNoWindow = true,
            };
            foreach (var arg in options.Arguments) info.ArgumentList.Add(arg);
            if (options.WorkingDirectory != null) info.WorkingDirectory = options.WorkingDirectory;
            info.Environment[SidecarProcess.MagicEnv] = SidecarProcess.MagicValue;
            foreach (var kv in options.Environment)
            {
                if (kv.Key != SidecarProcess.TokenEnv) info.Environment[kv.Key] = kv.Value;
            }
            info.Environment[SidecarProcess.TokenEnv] = token;

            var process = new Process { StartInfo = info, EnableRaisingEvents = true };
            var exited = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
            SidecarInstance? instance = null;
            process.Exited += (_, __) =>
            {
                exited.TrySetResult(true);
                Volatile.Read(ref instance)?.NoteExit();
            };
            try
            {
                process.Start();
            }
            catch (Exception e) when (e is Win32Exception || e is InvalidOperationException)
            {
                process.Dispose();
                throw new SidecarLaunchException($"could not start {options.Executable}: {e.Message}", "", e);
            }
            if (process.HasExited) exited.TrySetResult(true);
            var pid = process.Id;

            var tail = new TailBuffer(options.StderrTailLines);
            var stderrReader = Task.Run(() => ReadStderrAsync(process, tail, options.OnLog));
            var timeout = Task.Delay(options.HandshakeTimeout, cancellationToken);
            int skipped = 0, skippedBytes = 0;
            string? line;
            while (true)
            {
                var lineTask = process.StandardOutput.ReadLineAsync();
                var first = await Task.WhenAny(lineTask, timeout).ConfigureAwait(false);
                if (first != lineTask)
                {
                    await KillAndReapAsync(process, exited.Task).ConfigureAwait(false);
                    await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                    process.Dispose();
                    cancellationToken.ThrowIfCancellationRequested();
                    throw new SidecarHandshakeTimeoutException(options.HandshakeTimeout, tail.Text()) { ProcessId = pid };
                }
                line = await lineTask.ConfigureAwait(false);
                if (line == null || Handshake.IsHandshakeLine(line.Trim())) break;
                // stderr merged into stdout: a log line before the handshake, kept and passed on like one.
                AddLogLine(line, tail, options.OnLog);
                skipped++;
                skippedBytes += Encoding.UTF8.GetByteCount(line) + 1;
                if (skipped > Handshake.SkipLines || skippedBytes > Handshake.SkipBytes)
                {
                    await KillAndReapAsync(process, exited.Task).ConfigureAwait(false);
                    await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                    process.Dispose();
                    throw new SidecarMalformedHandshakeException(line,
                        $"not a game-sidecar: no handshake line within the first {Handshake.SkipLines} lines / " +
                        $"{Handshake.SkipBytes} bytes of stdout; {skipped} stdout lines were not a handshake",
                        tail.Text()) { ProcessId = pid };
                }
            }
            if (line == null)
            {
                int? code = await WaitBounded(exited.Task, TimeSpan.FromSeconds(2)).ConfigureAwait(false)
                    ? process.ExitCode
                    : (int?)null;
                if (code == null) await KillAndReapAsync(process, exited.Task).ConfigureAwait(false);
                await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                process.Dispose();
                if (code == SidecarStateDirLockedException.ExitCodeValue)
                    throw new SidecarStateDirLockedException(tail.Text()) { ProcessId = pid };
                throw new SidecarExitedBeforeHandshakeException(code, tail.Text()) { ProcessId = pid };
            }
            line = line.Trim();
            Handshake handshake;
            try
            {
                handshake = Handshake.Parse(line);
            }
            catch (FormatException e)
            {
                await KillAndReapAsync(process, exited.Task).ConfigureAwait(false);
                await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                process.Dispose();
                throw new SidecarMalformedHandshakeException(line, e.Message, tail.Text()) { ProcessId = pid };
            }
            // stdout stays read after the handshake: merged into it, stderr's lines go on
            // arriving there, and an unread pipe would block the sidecar once full.
            var stdoutReader = Task.Run(() => ReadLinesAsync(process.StandardOutput, tail, options.OnLog));
            var created = new SidecarInstance(process, tail, Task.WhenAll(stderrReader, stdoutReader), handshake, token,
                OwnedSocketDir(handshake, options));
            Volatile.Write(ref instance, created);
            if (exited.Task.IsCompleted) created.NoteExit(); // it ended between the handshake and here
            return created;
        }

        /// <summary>The game asked for the stop: close stdin (the sidecar exits within 1 s on EOF),
        /// wait <paramref name="grace"/>, SIGTERM, wait briefly, SIGKILL. With <paramref name="killNow"/>
        /// (a hung sidecar answers nothing) it goes straight to SIGKILL.</summary>
        public async Task<SidecarExit> StopAsync(TimeSpan grace, bool killNow)
        {
            _requested = true;
            if (!killNow)
            {
                try
                {
                    _process.StandardInput.Close();
                }
                catch (Exception e) when (e is IOException || e is ObjectDisposedException || e is InvalidOperationException)
                {
                    // Already gone: the pipe's other end is closed.
                }
                if (!await WaitBounded(Exit, grace).ConfigureAwait(false))
                {
                    Signal(SigTerm);
                    if (!await WaitBounded(Exit, TermGrace).ConfigureAwait(false)) Kill();
                }
            }
            else
            {
                Kill();
            }
            if (!await WaitBounded(Exit, TimeSpan.FromSeconds(5)).ConfigureAwait(false)) PollExited();
            return await Exit.ConfigureAwait(false);
        }

        /// <summary>The liveness check found it unresponsive: SIGKILL, and the exit says hung.</summary>
        public void KillHung()
        {
            _hung = true;
            Kill();
        }

        public void Kill()
        {
            _sentSignal = SigKill;
            try
            {
                if (!_process.HasExited) _process.Kill();
            }
            catch (Exception e) when (e is InvalidOperationException || e is Win32Exception || e is NotSupportedException)
            {
                // It exited between the check and the kill.
            }
        }

        private void Signal(int signal)
        {
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows))
            {
                Kill();
                return;
            }
            _sentSignal = signal;
            try
            {
                if (NativeKill(Pid, signal) != 0) Kill();
            }
            catch (Exception e) when (e is DllNotFoundException || e is EntryPointNotFoundException)
            {
                Kill();
            }
        }

        [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
        private static extern int NativeKill(int pid, int signal);

        /// <summary>Builds the exit record once, cleans up after the process, and tells the supervisor.</summary>
        private void NoteExit()
        {
            if (Interlocked.Exchange(ref _noted, 1) != 0) return;
            // The last lines a crashing sidecar wrote are usually read already; give the reader a moment.
            _stderrReader.Wait(TimeSpan.FromMilliseconds(50));
            int raw;
            try
            {
                _process.WaitForExit();
                raw = _process.ExitCode;
            }
            catch (InvalidOperationException)
            {
                raw = -1;
            }
            var exit = Describe(raw);
            RemoveOwnedDir();
            try
            {
                OnExit?.Invoke(exit);
            }
            finally
            {
                _exit.TrySetResult(exit);
                _process.Dispose();
            }
        }

        private SidecarExit Describe(int raw)
        {
            int? code = raw;
            int? signal = null;
            // .NET reports a death by signal N as exit code 128 + N (the shell's convention); the
            // sidecar's own exit codes are small, so a code above 128 means a signal ended it.
            if (!RuntimeInformation.IsOSPlatform(OSPlatform.Windows) && raw > 128 && raw < 128 + 65)
            {
                signal = raw - 128;
                code = null;
            }
            var kind = signal == null ? SidecarExitKind.Exited
                : signal == _sentSignal ? SidecarExitKind.Killed
                : SidecarExitKind.Signaled;
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows) && _sentSignal == SigKill) kind = SidecarExitKind.Killed;
            return new SidecarExit(kind, code, signal, _tail.Text(), _requested, _hung, Pid);
        }

        /// <summary>The temp folder the sidecar made for its socket (--listen unix, the default), or null.</summary>
        private static string? OwnedSocketDir(Handshake handshake, SidecarProcessOptions options)
        {
            if (!handshake.IsUnix) return null;
            foreach (var arg in options.Arguments)
            {
                // A socket path the game chose is the game's to manage.
                if (arg == "--listen" || arg.StartsWith("--listen=", StringComparison.Ordinal)) return null;
            }
            var dir = Path.GetDirectoryName(handshake.Address);
            return dir != null && Path.GetFileName(dir).StartsWith("game-sidecar-", StringComparison.Ordinal) ? dir : null;
        }

        private void RemoveOwnedDir()
        {
            if (_ownedDir == null) return;
            try
            {
                // Only what the sidecar puts there (its socket); anything else means it is not ours to delete.
                var socket = Path.Combine(_ownedDir, Path.GetFileName(Handshake.Address));
                if (File.Exists(socket)) File.Delete(socket);
                if (Directory.Exists(_ownedDir)) Directory.Delete(_ownedDir, recursive: false);
            }
            catch (Exception e) when (e is IOException || e is UnauthorizedAccessException)
            {
                // Left for the OS's temp cleaning; nothing the game can do about it.
            }
        }

        private static string NewToken()
        {
            var bytes = new byte[32];
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(bytes);
            return BitConverter.ToString(bytes).Replace("-", "").ToLowerInvariant();
        }

        private static Task ReadStderrAsync(Process process, TailBuffer tail, Action<string>? onLog) =>
            ReadLinesAsync(process.StandardError, tail, onLog);

        private static async Task ReadLinesAsync(StreamReader reader, TailBuffer tail, Action<string>? onLog)
        {
            string? line;
            while ((line = await reader.ReadLineAsync().ConfigureAwait(false)) != null) AddLogLine(line, tail, onLog);
        }

        private static void AddLogLine(string line, TailBuffer tail, Action<string>? onLog)
        {
            tail.Add(line);
            if (onLog == null) return;
            try
            {
                onLog(line);
            }
            catch (Exception)
            {
                // A faulty log callback must not stop the drain: a full pipe would block the sidecar.
            }
        }

        private static async Task KillAndReapAsync(Process process, Task exited)
        {
            try
            {
                if (!process.HasExited) process.Kill();
            }
            catch (InvalidOperationException)
            {
                // It exited between the check and the kill.
            }
            await WaitBounded(exited, TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            process.WaitForExit(); // reaps it and flushes the redirected streams' state
        }

        internal static async Task<bool> WaitBounded(Task task, TimeSpan timeout)
        {
            if (task.IsCompleted) return true;
            return await Task.WhenAny(task, Task.Delay(timeout)).ConfigureAwait(false) == task;
        }

        private sealed class TailBuffer
        {
            private readonly Queue<string> _lines = new Queue<string>();
            private readonly int _max;

            public TailBuffer(int max) { _max = Math.Max(1, max); }

            public void Add(string line)
            {
                lock (_lines)
                {
                    _lines.Enqueue(line);
                    while (_lines.Count > _max) _lines.Dequeue();
                }
            }

            public string Text()
            {
                lock (_lines) return string.Join("\n", _lines);
            }
        }
    }
}
