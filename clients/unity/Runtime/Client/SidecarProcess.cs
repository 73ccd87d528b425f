#nullable enable
// Launching the sidecar the way a game does (docs/protocol.md §1): spawn it with
// piped stdin/stdout/stderr and the magic and token environment, read the JSON
// handshake with a timeout, forward stderr lines to a log callback, and stop it
// (close stdin, wait, kill) when disposed. Stdin stays open as the lifeline: when
// the game dies the OS closes it and the sidecar exits by itself.
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Diagnostics;
using System.Security.Cryptography;
using System.Threading;
using System.Threading.Tasks;

namespace GameSidecar.Client
{
    /// <summary>How the sidecar ended.</summary>
    public enum SidecarExitKind
    {
        /// <summary>Ended by itself after stdin closed (the orderly path).</summary>
        Exited,
        /// <summary>Did not end within ExitGrace and was killed.</summary>
        Killed,
    }

    public readonly struct SidecarExit
    {
        public SidecarExitKind Kind { get; }
        public int ExitCode { get; }

        public SidecarExit(SidecarExitKind kind, int exitCode)
        {
            Kind = kind;
            ExitCode = exitCode;
        }

        public override string ToString() => $"{Kind} (exit code {ExitCode})";
    }

    public sealed class SidecarProcess : IAsyncDisposable
    {
        public const string MagicEnv = "GAME_SIDECAR_MAGIC";
        public const string MagicValue = "game-sidecar-v1";
        public const string TokenEnv = "GAME_SIDECAR_TOKEN";

        private readonly Process _process;
        private readonly SidecarProcessOptions _options;
        private readonly TailBuffer _tail;
        private readonly Task _stderrReader;
        private readonly Task _exited;
        private readonly Lazy<SidecarClient> _client;
        private Task<SidecarExit>? _stop;

        private SidecarProcess(Process process, SidecarProcessOptions options, TailBuffer tail, Task stderrReader,
            Task exited, Handshake handshake, string token)
        {
            _process = process;
            _options = options;
            _tail = tail;
            _stderrReader = stderrReader;
            _exited = exited;
            Handshake = handshake;
            Token = token;
            _client = new Lazy<SidecarClient>(() => new SidecarClient(handshake, token, options.Client));
        }

        public Handshake Handshake { get; }
        /// <summary>The token to send: the one chosen here, or the one the handshake reported.</summary>
        public string Token { get; }
        public int Pid => _process.Id;
        public bool HasExited => _exited.IsCompleted;
        /// <summary>A client for this sidecar (made on first use, disposed with the process).</summary>
        public SidecarClient Client => _client.Value;
        /// <summary>The last stderr lines, newline-joined.</summary>
        public string StderrTail() => _tail.Text();

        /// <summary>
        /// Spawns the sidecar and waits for its handshake. Throws
        /// SidecarExitedBeforeHandshakeException (SidecarStateDirLockedException for exit code 3),
        /// SidecarMalformedHandshakeException, SidecarHandshakeTimeoutException, or
        /// SidecarLaunchException when the executable cannot be started. A failed launch
        /// leaves no process behind.
        /// </summary>
        public static async Task<SidecarProcess> LaunchAsync(SidecarProcessOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            options ??= new SidecarProcessOptions();
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
            info.Environment[MagicEnv] = MagicValue;
            foreach (var kv in options.Environment)
            {
                if (kv.Key != TokenEnv) info.Environment[kv.Key] = kv.Value;
            }
            info.Environment[TokenEnv] = token;

            var process = new Process { StartInfo = info, EnableRaisingEvents = true };
            var exited = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
            process.Exited += (_, __) => exited.TrySetResult(true);
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
            var lineTask = process.StandardOutput.ReadLineAsync();
            var timeout = Task.Delay(options.HandshakeTimeout, cancellationToken);
            var first = await Task.WhenAny(lineTask, timeout).ConfigureAwait(false);
            if (first != lineTask)
            {
                await KillAsync(process, exited.Task).ConfigureAwait(false);
                await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                process.Dispose();
                cancellationToken.ThrowIfCancellationRequested();
                throw new SidecarHandshakeTimeoutException(options.HandshakeTimeout, tail.Text()) { ProcessId = pid };
            }
            var line = await lineTask.ConfigureAwait(false);
            if (line == null)
            {
                int? code = await WaitBounded(exited.Task, TimeSpan.FromSeconds(2)).ConfigureAwait(false)
                    ? process.ExitCode
                    : (int?)null;
                if (code == null) await KillAsync(process, exited.Task).ConfigureAwait(false);
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
                await KillAsync(process, exited.Task).ConfigureAwait(false);
                await WaitBounded(stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                process.Dispose();
                throw new SidecarMalformedHandshakeException(line, e.Message, tail.Text()) { ProcessId = pid };
            }
            return new SidecarProcess(process, options, tail, stderrReader, exited.Task, handshake, token);
        }

        /// <summary>
        /// Closes stdin (the sidecar exits within 1 s on EOF), waits ExitGrace, then kills;
        /// reaps the process. Idempotent: later calls return the first result.
        /// </summary>
        public Task<SidecarExit> StopAsync()
        {
            lock (_tail)
            {
                return _stop ??= StopOnceAsync();
            }
        }

        public async ValueTask DisposeAsync()
        {
            await StopAsync().ConfigureAwait(false);
        }

        private async Task<SidecarExit> StopOnceAsync()
        {
            if (_client.IsValueCreated) _client.Value.Dispose();
            try
            {
                _process.StandardInput.Close();
            }
            catch (Exception e) when (e is System.IO.IOException || e is ObjectDisposedException)
            {
                // Already gone: the pipe's other end is closed.
            }
            var kind = SidecarExitKind.Exited;
            if (!await WaitBounded(_exited, _options.ExitGrace).ConfigureAwait(false))
            {
                kind = SidecarExitKind.Killed;
                await KillAsync(_process, _exited).ConfigureAwait(false);
            }
            await WaitBounded(_stderrReader, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
            var code = _process.ExitCode;
            _process.Dispose();
            return new SidecarExit(kind, code);
        }

        private static string NewToken()
        {
            var bytes = new byte[32];
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(bytes);
            return BitConverter.ToString(bytes).Replace("-", "").ToLowerInvariant();
        }

        private static async Task ReadStderrAsync(Process process, TailBuffer tail, Action<string>? onLog)
        {
            string? line;
            while ((line = await process.StandardError.ReadLineAsync().ConfigureAwait(false)) != null)
            {
                tail.Add(line);
                if (onLog == null) continue;
                try
                {
                    onLog(line);
                }
                catch (Exception)
                {
                    // A faulty log callback must not stop the drain: a full stderr pipe would block the sidecar.
                }
            }
        }

        private static async Task KillAsync(Process process, Task exited)
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

        private static async Task<bool> WaitBounded(Task task, TimeSpan timeout)
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
