// A minimal stand-in for the UnityEditor types the package's Editor code uses, with
// the names, namespaces and members of Unity 2021.3. Nothing here behaves like Unity.
using System;

namespace UnityEditor
{
    public enum BuildTarget
    {
        StandaloneOSX = 2, StandaloneWindows = 5, iOS = 9, Android = 13, StandaloneWindows64 = 19,
        WebGL = 20, StandaloneLinux64 = 24,
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class InitializeOnLoadAttribute : Attribute { }
}

namespace UnityEditor.Build
{
    public interface IOrderedCallback
    {
        int callbackOrder { get; }
    }

    public interface IPreprocessBuildWithReport : IOrderedCallback
    {
        void OnPreprocessBuild(Reporting.BuildReport report);
    }

    public interface IPostprocessBuildWithReport : IOrderedCallback
    {
        void OnPostprocessBuild(Reporting.BuildReport report);
    }

    public interface IUnityLinkerProcessor : IOrderedCallback
    {
        string GenerateAdditionalLinkXmlFile(Reporting.BuildReport report, UnityLinker.UnityLinkerBuildPipelineData data);
        void OnBeforeRun(Reporting.BuildReport report, UnityLinker.UnityLinkerBuildPipelineData data);
        void OnAfterRun(Reporting.BuildReport report, UnityLinker.UnityLinkerBuildPipelineData data);
    }

    public class BuildFailedException : Exception
    {
        public BuildFailedException(string message) : base(message) { }
        public BuildFailedException(Exception innerException) : base(innerException.Message, innerException) { }
    }
}

namespace UnityEditor.Build.Reporting
{
    public struct BuildSummary
    {
        public BuildTarget platform { get; set; }
        public string outputPath { get; set; }
    }

    public class BuildReport
    {
        public BuildSummary summary { get; set; }
    }
}

namespace UnityEditor.UnityLinker
{
    public sealed class UnityLinkerBuildPipelineData
    {
        public string inputDirectory { get; set; }
    }
}
