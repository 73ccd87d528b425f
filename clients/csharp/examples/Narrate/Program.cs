// The C# counterpart of `game-sidecar demo` (sidecar/demo.py): launch the sidecar the
// way a game does, send a small scene as deltas, and narrate a few events with the
// text streaming to the terminal.
//
//   dotnet run --project clients/csharp/examples/Narrate -- [--sidecar PATH] [--config FILE.toml]
//
// PATH defaults to $GAME_SIDECAR_EXE, then the repository's .venv/bin/game-sidecar.
// With --config clients/cpp/tests/sidecar_test.toml it runs against the scripted model.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;

var exe = Environment.GetEnvironmentVariable("GAME_SIDECAR_EXE");
string? config = null;
for (var i = 0; i < args.Length; i++)
{
    if (args[i] == "--sidecar" && i + 1 < args.Length) exe = args[++i];
    else if (args[i] == "--config" && i + 1 < args.Length) config = Path.GetFullPath(args[++i]);
    else
    {
        Console.Error.WriteLine("usage: Narrate [--sidecar PATH] [--config FILE.toml]");
        return 64;
    }
}
exe ??= DefaultSidecar();

var arguments = new List<string> { "serve" };
if (config != null) arguments.AddRange(new[] { "--config", config });
Console.Error.WriteLine("launching game-sidecar...");
var clock = Stopwatch.StartNew();
SidecarProcess sidecar;
try
{
    sidecar = await SidecarProcess.LaunchAsync(new SidecarProcessOptions
    {
        Executable = exe,
        Arguments = arguments,
        HandshakeTimeout = TimeSpan.FromSeconds(30),
        // The sidecar's JSON log lines; a game would hand these to its own logger.
        OnLog = line => { if (Environment.GetEnvironmentVariable("NARRATE_VERBOSE") != null) Console.Error.WriteLine("[sidecar] " + line); },
    });
}
catch (SidecarLaunchException e)
{
    Console.Error.WriteLine(e.Message);
    return 1;
}
await using (sidecar)
{
    Console.Error.WriteLine($"handshake after {clock.ElapsedMilliseconds} ms: {sidecar.Handshake.Target}");
    var client = sidecar.Client;
    var info = await client.GetInfoAsync();
    var notReady = info.Profiles.FirstOrDefault(p => p.IsDefault && !p.Ready);
    if (notReady != null)
    {
        Console.Error.WriteLine($"Narrate: cannot narrate: the default profile '{notReady.Name}' is not ready: {notReady.UnavailableReason}\n" +
            "Two ways out: install the embedded model's weights, or pass --config FILE naming a provider profile " +
            "(docs/runs.md; clients/cpp/tests/sidecar_test.toml uses the scripted model).");
        return 1;
    }
    // Display-name aliases: the model reads "Bram", not "npc_2", and so does the player.
    var session = await client.OpenTrackedSessionAsync("demo", new SessionOptions { AliasMode = AliasMode.DisplayName });
    await session.ApplyAsync(Scene());
    Console.Error.WriteLine($"scene sent as deltas, session revision {session.Revision}");

    var events = new (string Text, string[] Ids)[]
    {
        ("The goblin lunges at Mira with a rusty blade.", new[] { "BP_Goblin_C_2147483647", "Player_0" }),
        ("Mira parries and the blade snaps in two.", new[] { "Player_0", "BP_Goblin_C_2147483647" }),
        ("Old Bram shouts a warning from behind the bar.", new[] { "NPC_Bram_7f3a" }),
    };
    foreach (var (text, ids) in events)
    {
        var happened = new GameEvent { Text = text };
        happened.EntityIds.AddRange(ids);
        await session.ApplyAsync(new DeltaOp { RecordEvent = new RecordEventOp { Event = happened } });
        Console.WriteLine($"\n> {text}");
        var request = new RunRequest { SessionId = "demo", Narrate = new NarrateInput { Text = text } };
        request.Narrate.EntityIds.AddRange(ids);
        Usage? usage = null;
        try
        {
            await foreach (var e in client.Run(request))
            {
                switch (e.KindCase)
                {
                    case RunEvent.KindOneofCase.Text:
                        Console.Write(e.Text.Text);
                        break;
                    case RunEvent.KindOneofCase.Usage:
                        usage = e.Usage;
                        break;
                    case RunEvent.KindOneofCase.Finished:
                        var t = e.Finished.Timings;
                        var tokens = usage?.CompletionTokens ?? 0;
                        var genSeconds = Math.Max((t.TotalMs - t.FirstTokenMs) / 1000, 1e-9);
                        Console.WriteLine($"\n  [first token {t.FirstTokenMs:0} ms, {tokens} tokens, {tokens / genSeconds:0.0} tokens/s]");
                        break;
                }
            }
        }
        catch (SidecarException e)
        {
            Console.Error.WriteLine($"\nrun failed: {e.Message}");
            return 1;
        }
    }
    await client.CloseSessionAsync("demo");
}
return 0;

static string DefaultSidecar()
{
    var dir = new DirectoryInfo(AppContext.BaseDirectory);
    while (dir != null && !File.Exists(Path.Combine(dir.FullName, ".venv", "bin", "game-sidecar"))) dir = dir.Parent;
    return dir != null ? Path.Combine(dir.FullName, ".venv", "bin", "game-sidecar") : "game-sidecar";
}

static DeltaOp[] Scene()
{
    const string tavern = "/Game/Maps/Tavern.Tavern:PersistentLevel";
    return new[]
    {
        Entity(tavern, EntityKind.Location, "The Crooked Lantern", "A smoky tavern with low beams and a crackling hearth.", ""),
        Entity("Player_0", EntityKind.Player, "Mira", "A young ranger in a green cloak.", tavern, ("hp", 18), ("max_hp", 24)),
        Entity("BP_Goblin_C_2147483647", EntityKind.Character, "Goblin", "A wiry goblin with yellow eyes.", tavern, ("hp", 6), ("hostile", true)),
        Entity("NPC_Bram_7f3a", EntityKind.Character, "Bram", "The grey-bearded innkeeper.", tavern),
        new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "weather", Value = new Value { StringValue = "storm" } } },
        new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "time_of_day", Value = new Value { StringValue = "night" } } },
    };
}

static DeltaOp Entity(string id, EntityKind kind, string name, string description, string location, params (string Key, object Value)[] fields)
{
    var entity = new Entity { Id = id, Kind = kind, Name = name, Description = description, LocationId = location };
    foreach (var (key, value) in fields)
    {
        var v = value switch
        {
            bool b => new Value { BoolValue = b },
            int n => new Value { IntValue = n },
            _ => new Value { StringValue = value.ToString() ?? "" },
        };
        entity.Fields.Add(key, new FieldValue { Value = v });
    }
    return new DeltaOp { UpsertEntity = new UpsertEntityOp { Entity = entity } };
}
