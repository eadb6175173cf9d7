package tools

import "regexp"

var (
	namePattern       = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	classPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*\.[A-Z][A-Za-z0-9]*$`)
	pluginSlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	// paramNamePattern is what every model provider accepts as a property key.
	paramNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

var (
	categories   = []string{CategoryGeneral, CategoryResearch, CategoryCommunication, CategoryProductivity, CategoryData, CategorySystem}
	paramTypes   = []string{TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeArray, TypeObject}
	settingTypes = []string{
		SettingString, SettingText, SettingPassword, SettingURL, SettingInteger, SettingNumber,
		SettingBoolean, SettingSelect, SettingStringList, SettingIntegerList,
	}
)
